"""Reminders: what changed outside the conversation, told to the model beside the
next message instead of by rewriting the system prompt (which would defeat the
provider's prompt cache and change what the model was told mid-session)."""

from __future__ import annotations

from collections.abc import Sequence

from loopd.protocol.messages import TextPart

OPEN, CLOSE = "<system-reminder>", "</system-reminder>"


def reminder_part(texts: Sequence[str]) -> TextPart:
    """Reminders as one text part the model reads beside a message."""
    body = "\n\n".join(texts)
    return TextPart(f"{OPEN}\n{body}\n{CLOSE}")
