"""Slash commands the session layer runs itself, whatever the editor.

A prompt whose text is `/clear` (optionally followed by words, ignored) does not go
to the model: it starts a fresh model context in the same session. The journal keeps
the prompt and a note saying what happened, so a replay shows where the context
restarted. A command is offered (`available_commands_update`) only when the
session's runtime can really do it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from loopd.protocol.events import Command, Prompt

CLEAR = Command("clear", "Start a fresh model context; the conversation so far stays visible")
CLEARED_NOTE = "Started a fresh context: earlier messages are no longer sent to the model."


@runtime_checkable
class ContextClearing(Protocol):
    """A runtime that can drop its model context and keep everything else."""

    async def clear_context(self) -> None: ...


def commands_for(runtime: object) -> tuple[Command, ...]:
    return (CLEAR,) if isinstance(runtime, ContextClearing) else ()


def slash_command(prompt: Prompt, runtime: object) -> str | None:
    """The name of the session command `prompt` invokes, or None (a normal prompt,
    or a command this runtime cannot run: then the model gets the text as it is)."""
    words = prompt.text.strip().split(maxsplit=1)
    if not words or not words[0].startswith("/"):
        return None
    name = words[0][1:]
    return name if name in {c.name for c in commands_for(runtime)} else None
