"""Repairing a journal into a history the next request can be built on.

The engine journals tool results one by one as they finish, and a process can die at
any point. Reconciling is a pure function of what is on disk, so startup, load and
resume all reach the same fixed point and running it twice changes nothing:

- every assistant tool use gets exactly one result, in the model's order; a call the
  process never finished is closed with an error saying so, and calls that did run
  keep their real results (running them again would be a second effect, not a retry);
- an assistant message is only ever journaled whole, so no text fragment survives;
- on the screen side, a tool call left without a final status is shown as failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loopd.protocol.messages import Message, ToolResultPart

UNFINISHED = "The session ended before this call finished; it may not have run."


def reconcile_messages(journal: Sequence[Message]) -> list[Message]:
    history: list[Message] = []
    i = 0
    while i < len(journal):
        message = journal[i]
        i += 1
        if message.role != "assistant" or not message.tool_uses:
            if not _only_results(message):  # stray results with no call are dropped
                history.append(message)
            continue
        found: dict[str, ToolResultPart] = {}
        while i < len(journal) and _only_results(journal[i]):
            found.update((r.tool_use_id, r) for r in journal[i].tool_results)
            i += 1
        history.append(message)
        history.append(
            Message(
                "user",
                tuple(
                    found.get(use.id, ToolResultPart(use.id, UNFINISHED, True))
                    for use in message.tool_uses
                ),
            )
        )
    return history


def _only_results(message: Message) -> bool:
    return (
        message.role == "user"
        and bool(message.parts)
        and len(message.tool_results) == len(message.parts)
    )


def reconcile_events(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The journaled updates plus a `failed` update for every tool call that never
    reached `completed` or `failed`."""
    out = [dict(e) for e in events]
    open_calls: dict[str, None] = {}
    for event in out:
        kind = event.get("sessionUpdate")
        if kind not in ("tool_call", "tool_call_update"):
            continue
        call_id = str(event.get("toolCallId"))
        if event.get("status") in ("completed", "failed"):
            open_calls.pop(call_id, None)
        elif kind == "tool_call":
            open_calls[call_id] = None
    out.extend(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "failed",
            "content": [{"type": "content", "content": {"type": "text", "text": UNFINISHED}}],
        }
        for call_id in open_calls
    )
    return out
