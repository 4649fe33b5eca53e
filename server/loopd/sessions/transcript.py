"""A session's conversation as text: what `loopd sessions show` prints, and what a
runtime switch hands to the next runtime.

A switch cannot hand over the old runtime's own context (a CLI's session, the native
engine's messages): each runtime keeps it in its own form. What every runtime can
take is the conversation as the person saw it, from the journal, so the new runtime
starts from that transcript, given with the first prompt after the switch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from loopd.protocol.events import EmbeddedResourceBlock, Prompt

HANDOVER = "_handover"  # the runtime-state key holding a transcript not yet handed over
HANDOVER_URI = "loopd://session/transcript"
HANDOVER_NOTE = (
    "This session was continued from another agent. The conversation so far is "
    "attached; carry on from it."
)


def transcript(
    events: Iterable[Mapping[str, Any]], speakers: tuple[str, str] = ("You", "loopd")
) -> str:
    """User and agent text under headings, and one line per tool call."""
    lines: list[str] = []
    last = ""
    for event in events:
        kind = event.get("sessionUpdate")
        if kind in ("user_message_chunk", "agent_message_chunk"):
            who = speakers[0] if kind == "user_message_chunk" else speakers[1]
            if kind != last:
                lines.append(f"\n## {who}\n")
            lines[-1] += event.get("content", {}).get("text", "")
        elif kind == "tool_call":
            lines.append(f"→ {event.get('title', '')}")
        last = kind or ""
    return "\n".join(lines).strip()


def with_handover(prompt: Prompt, handed: str) -> Prompt:
    """`prompt` with the previous conversation attached, for the first turn after a
    runtime switch."""
    note = EmbeddedResourceBlock(HANDOVER_URI, f"{HANDOVER_NOTE}\n\n{handed}")
    return Prompt((note, *prompt.blocks))
