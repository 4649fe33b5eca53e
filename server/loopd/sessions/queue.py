"""The prompts that wait behind a running turn, and the words that steer it.

A prompt sent while a turn runs waits (the session layer counts it; see
`SessionManager.prompt`) and the asking editor is told so at once, because a prompt
that vanishes into a queue with no sign looks like one that was lost. Steering is
the other way to speak to a busy session: the text goes to the running turn itself
and is read at its next step.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from loopd.protocol.errors import ConfigError, LoopdError, RuntimeFailure
from loopd.protocol.events import AgentMessageChunk, Prompt
from loopd.protocol.events_wire import to_wire
from loopd.sessions.live import ClientLink, LiveSession

log = logging.getLogger(__name__)


class NotRunning(LoopdError):
    """Steering with no turn to steer: the caller should send a prompt instead."""


@runtime_checkable
class Steerable(Protocol):
    """A runtime whose running turn reads what the person says mid-turn."""

    def steer(self, text: str) -> bool:
        """Hand `text` to the running turn; False when none runs."""
        ...


def steer_turn(runtime: object, name: str, text: str) -> None:
    """Raises `NotRunning` when no turn runs, `RuntimeFailure` when the runtime
    cannot be steered, `ConfigError` for empty text."""
    if not isinstance(runtime, Steerable):
        raise RuntimeFailure(f"the {name} runtime cannot be steered; send a prompt")
    if not text.strip():
        raise ConfigError("nothing to say: the text is empty")
    if not runtime.steer(text):
        raise NotRunning("no turn is running in this session; send it as a prompt")


async def say_entry_changed(live: LiveSession, link: ClientLink, changed: Sequence[str]) -> None:
    """Tell the editor that loaded a session that its runtime's catalog entry changed
    since it was last open (a model list, the command, its arguments...), naming the
    fields, since replies may now differ. Shown on that connection, not journaled."""
    runtime = live.record.runtime.get("name", "runtime")
    what = ", ".join(changed)
    note = (
        f"\n\n[The `{runtime}` runtime changed in the catalog since this session was "
        f"last open ({what}); it continues on the runtime as configured now.]\n"
    )
    wire = to_wire(AgentMessageChunk(note, f"msg_{uuid.uuid4().hex[:12]}", "note"))
    wire["_meta"] = {**wire["_meta"], "loopd": {"catalogChanged": list(changed)}}
    try:
        await link.send_update(live.id, wire)
    except Exception:
        log.warning("could not tell a connection its runtime changed", exc_info=True)


async def say_queued(live: LiveSession, link: ClientLink, prompt: Prompt) -> None:
    """Tell the asking editor its prompt waits, and behind how many turns (the one
    running and those waiting before it: `waiting` counts this prompt already). Shown
    on that connection only and not journaled: the prompt itself is journaled when
    its turn starts. `_meta.loopd.queued` carries the count for clients that show it."""
    ahead = live.waiting
    turns = "turn" if ahead == 1 else "turns"
    note = f"\n\n[Queued: {title_of(prompt.text or '(no text)')!r} runs after {ahead} {turns}.]\n"
    wire = to_wire(AgentMessageChunk(note, f"msg_{uuid.uuid4().hex[:12]}", "note"))
    wire["_meta"] = {**wire["_meta"], "loopd": {"queued": {"ahead": ahead}}}
    try:
        await link.send_update(live.id, wire)
    except Exception:
        log.warning("could not tell a connection its prompt is queued", exc_info=True)


def title_of(text: str) -> str:
    lines = text.strip().splitlines()
    first = lines[0] if lines else ""
    return first if len(first) <= 80 else first[:77] + "..."
