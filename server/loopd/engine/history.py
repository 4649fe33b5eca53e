"""The messages a turn adds to the history, shaped so the history stays valid for the
next request whatever the model or the person sent.

Pure functions over protocol parts: the person's blocks become parts every provider
accepts, a model's tool-call ids become unique in the session before anything is
journaled (results and the screen pair by id), and a command the person typed reads
as their own message. The engine (`loopd.engine.loop`) decides when to append them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from loopd.protocol.events import (
    EmbeddedResourceBlock,
    ImageBlock,
    Prompt,
    ResourceLinkBlock,
    TextBlock,
)
from loopd.protocol.messages import ImagePart, Part, TextPart, ToolUsePart


def random_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def distinct_tool_ids(
    parts: tuple[Part, ...], used: set[str], new_id: Callable[[str], str]
) -> tuple[Part, ...]:
    """`parts` with every tool call's id unique in the session; `used` (the ids the
    history holds) grows by the ids given out.

    A model may repeat an id (two calls in one reply, or the same `call_0` at every
    step, as some OpenAI-compatible servers do) or send none. Results are paired,
    and calls are shown, by id: two calls sharing one would show as one and get one
    result. So a repeated id becomes `<id>_2` (`_3`, ...) and a missing one a fresh
    id, here, before the reply is journaled: the rewritten id is the call's id from
    then on, for the screen, its result and the history sent back to the model."""
    out: list[Part] = []
    for part in parts:
        if isinstance(part, ToolUsePart):
            unique = part.id or new_id("toolu")
            n = 1
            while unique in used:
                n += 1
                unique = f"{part.id}_{n}"
            used.add(unique)
            part = part if unique == part.id else ToolUsePart(unique, part.name, part.input)
        out.append(part)
    return tuple(out)


def exec_message(command: str, output: str) -> str:
    """How a typed command and its output read in the history."""
    return f"I ran a command myself:\n$ {command}\n\n{output}"


def prompt_parts(prompt: Prompt) -> tuple[Part, ...]:
    """The person's content blocks as model parts. Resources become text the model can
    read, with their URI, because no provider takes an editor's resource as such."""
    parts: list[Part] = []
    for block in prompt.blocks:
        match block:
            case TextBlock(text):
                parts.append(TextPart(text))
            case ImageBlock(data, mime_type, _):
                parts.append(ImagePart(mime_type, data))
            case ResourceLinkBlock(uri, name, _):
                parts.append(TextPart(f"[Referenced: {name} <{uri}>]"))
            case EmbeddedResourceBlock(uri, text, _):
                parts.append(TextPart(f'<resource uri="{uri}">\n{text}\n</resource>'))
    return tuple(parts) or (TextPart(""),)
