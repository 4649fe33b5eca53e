"""Slash commands the session layer runs itself, whatever the editor.

A prompt whose text starts with a command's name (`/clear`, `/compact`, `/undo`;
words after it are ignored) does not start a turn. `/clear` starts a fresh model
context in the same session; `/compact` has the model summarise the conversation and
continues from that summary alone (the transcript stays whole; only what the model
is sent changes); `/undo` puts back the files the last turn changed; `/continue`
continues a turn that a crash cut off (`loopd.sessions.resume`).
The journal keeps the prompt and a note saying what happened, so a replay shows where
the context changed. A command is offered
(`available_commands_update`) only when the session's runtime can really do it.

A runtime may also offer commands that become a prompt (`PromptCommands`: an MCP
server's prompts): the words after the name fill it in, and the filled-in prompt
runs as a normal turn. And context to @-mention (`Mentionable`: an MCP server's
resources), which the editor lists and links in a prompt.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from loopd.protocol.events import Command, Prompt
from loopd.protocol.turns import UndoReport
from loopd.protocol.wire.shapes import Mention

CLEAR = Command("clear", "Start a fresh model context; the conversation so far stays visible")
COMPACT = Command("compact", "Replace the model context with a summary of it, to free room")
UNDO = Command("undo", "Put back the files the last turn changed (where still unchanged since)")
CONTINUE = Command("continue", "Continue the last turn, cut off when loopd stopped while it ran")
CLEARED_NOTE = "Started a fresh context: earlier messages are no longer sent to the model."


@runtime_checkable
class ContextClearing(Protocol):
    """A runtime that can drop its model context and keep everything else."""

    async def clear_context(self) -> None: ...


@runtime_checkable
class ContextCompacting(Protocol):
    """A runtime that can replace its model context with a summary of it."""

    async def compact_context(self) -> str | None:
        """The note to show (see `loopd.protocol.turns.compacted_note`), None if
        cancelled."""
        ...


@runtime_checkable
class PromptCommands(Protocol):
    """A runtime with commands that are filled in into a prompt."""

    def prompt_commands(self) -> tuple[Command, ...]: ...

    async def expand(self, name: str, text: str) -> Prompt:
        """The prompt command `name` fills in from `text` (the words after it).
        Raises `LoopdError` with what the person should read when it cannot."""
        ...


@runtime_checkable
class Mentionable(Protocol):
    """A runtime with context the person may @-mention; a prompt that links it
    (a `resource_link` with its uri) has it read in before the model sees it."""

    def mentions(self) -> tuple[Mention, ...]: ...


@runtime_checkable
class FileUndoing(Protocol):
    """A runtime that can put back its last turn's file changes."""

    async def undo(self) -> UndoReport: ...


def commands_for(runtime: object) -> tuple[Command, ...]:
    offered = (
        (CLEAR, isinstance(runtime, ContextClearing)),
        (COMPACT, isinstance(runtime, ContextCompacting)),
        (UNDO, isinstance(runtime, FileUndoing)),
    )
    own = tuple(command for command, works in offered if works)
    return (
        *own,
        CONTINUE,  # the session layer's own, for every runtime (`loopd.sessions.resume`)
        *(runtime.prompt_commands() if isinstance(runtime, PromptCommands) else ()),
    )


def mentions_of(runtime: object) -> tuple[Mention, ...]:
    """What the runtime offers to @-mention (nothing, for runtimes that cannot)."""
    return runtime.mentions() if isinstance(runtime, Mentionable) else ()


def fills_in(runtime: object, name: str) -> bool:
    """Whether command `name` is one the runtime fills in into a prompt."""
    names = runtime.prompt_commands() if isinstance(runtime, PromptCommands) else ()
    return name in {c.name for c in names}


def command_text(prompt: Prompt) -> str:
    """The words after a command's name."""
    words = prompt.text.strip().split(maxsplit=1)
    return words[1] if len(words) > 1 else ""


def slash_command(prompt: Prompt, runtime: object) -> str | None:
    """The name of the session command `prompt` invokes, or None (a normal prompt,
    or a command this runtime cannot run: then the model gets the text as it is)."""
    words = prompt.text.strip().split(maxsplit=1)
    if not words or not words[0].startswith("/"):
        return None
    name = words[0][1:]
    return name if name in {c.name for c in commands_for(runtime)} else None


async def run_command(runtime: object, name: str) -> str | None:
    """Run a command `slash_command` found; the note to show, None if cancelled."""
    if name == CLEAR.name and isinstance(runtime, ContextClearing):
        await runtime.clear_context()
        return CLEARED_NOTE
    if name == COMPACT.name and isinstance(runtime, ContextCompacting):
        return await runtime.compact_context()
    if name == UNDO.name and isinstance(runtime, FileUndoing):
        return (await runtime.undo()).summary
    raise AssertionError(f"/{name} is not a command of this runtime")
