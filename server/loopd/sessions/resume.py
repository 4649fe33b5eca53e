"""Resuming a turn that a crash cut off (seed 002's `ReconcileSession` and
`PrepareResume`).

A turn is marked open in the session's stored state when it starts (`TURN_OPEN`,
the time it started) and the mark goes with the state saved when it ends, however
it ends: cancelled, failed or done. A process that dies mid-turn leaves the mark, so
a session loaded with it was cut off: its history is reconciled as always (every
call paired, an unfinished one saying it may not have run) and the editor that
loads it is told, with the one action that continues it: `/continue` (ACP, any
client that sends prompts), `loopd/session/continue` (LSP).

Continuing is a new turn whose prompt asks the model to carry on from where the
history stops, checking before it repeats a call that may not have run. It is the
person's choice, never automatic: the crash may have been the work itself (a
command that took the machine down), and the person may not want it again.
"""

from __future__ import annotations

import logging
import uuid

from loopd.protocol.events import AgentMessageChunk, Prompt, TextBlock
from loopd.protocol.events_wire import to_wire
from loopd.sessions.live import ClientLink, LiveSession

log = logging.getLogger(__name__)

TURN_OPEN = "turn_open"  # the runtime-state key: when the running turn started
CONTINUE_PROMPT = Prompt(
    (
        TextBlock(
            "[loopd] The previous turn was cut off: loopd stopped while it ran. Continue "
            "the task from where the conversation stops. A call whose result says it may "
            "not have run may or may not have had its effect: check before repeating it."
        ),
    )
)
NOTHING_TO_CONTINUE = "Nothing to continue: the last turn ended."


def was_cut(live: LiveSession) -> bool:
    """Whether the session's last turn started and never ended (see the module doc)."""
    return TURN_OPEN in live.record.runtime_state


async def say_cut(live: LiveSession, link: ClientLink) -> None:
    """Tell the editor that loaded a cut-off session so, and how to continue it.
    Shown on that connection, not journaled; `_meta.loopd.interrupted` marks it for
    clients that offer the action as a button."""
    started = live.record.runtime_state.get(TURN_OPEN)
    note = (
        f"\n\n[The last turn (started {started}) was cut off: loopd stopped while it "
        "ran. Calls it had not finished are marked failed. Send /continue to continue "
        "it.]\n"
    )
    wire = to_wire(AgentMessageChunk(note, f"msg_{uuid.uuid4().hex[:12]}", "note"))
    wire["_meta"] = {**wire["_meta"], "loopd": {"interrupted": True}}
    try:
        await link.send_update(live.id, wire)
    except Exception:
        log.warning("could not tell a connection its session was cut off", exc_info=True)
