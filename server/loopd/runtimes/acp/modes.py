"""loopd's mode over a child ACP agent, pure: the answer to a child's question before
the person is asked (`decide`), the child's own modes that ask first
(`CAREFUL_MODES`: the runtime puts the child in one), and the child's stop reason in
loopd's closed set (`stop_reason`). The runtime (`loopd.runtimes.acp.agent`) applies
them; nothing here does I/O.
"""

from __future__ import annotations

from typing import cast, get_args

from loopd.policy.modes import Mode
from loopd.protocol.turns import StopReason

CAREFUL_MODES = ("default", "ask", "manual", "read-only")  # the child's "ask first" modes
READ_KINDS = frozenset({"read", "search", "think"})
EDIT_KINDS = frozenset({"edit", "delete", "move"})


def stop_reason(child: str) -> StopReason:
    """The child's stop reason; one loopd does not know ends the turn normally."""
    return cast(StopReason, child) if child in get_args(StopReason) else "end_turn"


def decide(mode: Mode, kind: str, paths: tuple[str, ...], inside: bool) -> str:
    """loopd's answer to a child's question before the person is asked:
    "allow", "deny" or "ask". Outside the session's folders always asks."""
    if kind in READ_KINDS and inside:
        return "allow"
    if kind in EDIT_KINDS and inside and paths and mode in (Mode.ACCEPT_EDITS, Mode.FULL_AUTO):
        return "allow"
    if mode is Mode.READ_ONLY and kind in EDIT_KINDS:
        return "deny"
    return "deny" if mode is Mode.FULL_AUTO else "ask"
