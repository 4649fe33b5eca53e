"""The native engine's system prompt: who it is, where it works, and the workspace's
own instructions (the chain of `loopd.context.instructions`, read here from disk).

The prompt is built once, when a session starts, and stored with the session: mode,
model and thinking changes, `/clear`, `/compact` and a reload all reuse the stored
bytes, so the provider's prompt cache keeps working and the model's rules do not
change under it. Later changes to the files arrive as reminders.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from loopd.context.instructions import (
    MAX_INSTRUCTION_CHARS,
    chain_paths,
    folder_paths,
    render_chain,
)
from loopd.protocol.reading import FileRead, FileReader, ReadRefused

MAX_INSTRUCTION_BYTES = 4 * MAX_INSTRUCTION_CHARS + 4
"""Bytes read of one instruction file: enough for the characters shown of it in any
encoding, so a cut file is always shown cut."""

BASE = """You are loopd, a coding agent working inside the user's editor.

Work in the workspace at {cwd}{more_roots}. Use the tools to read before you change
anything, keep edits minimal and exact, and run the project's own checks when you
can. Paths you pass to tools may be relative to the workspace. When a tool fails,
read its error and try a different approach rather than repeating the same call.
Keep the todo list (the `plan` tool) current on multi-step work. Answer in
concise Markdown."""


def system_prompt(cwd: str, roots: Sequence[str], chain: Mapping[str, str]) -> str:
    others = [r for r in roots if r != cwd]
    more = f" (also: {', '.join(others)})" if others else ""
    return "\n\n".join([BASE.format(cwd=cwd, more_roots=more), *render_chain(chain, cwd)])


def read_chain(cwd: str, reader: FileReader) -> dict[str, str]:
    """The instruction files that exist now, path → text, outermost first, read
    beneath the repository (or the cwd) with `reader`'s rules. A file it refuses (a
    link out of the repository, a FIFO, a secret) is named with why, never read;
    one past `MAX_INSTRUCTION_BYTES` is cut (and shown cut, see `clip`)."""
    cwd = os.path.realpath(cwd)
    top = repo_root(cwd)
    return _read(chain_paths(cwd, top), reader.within((top or cwd,)))


def read_guides(cwd: str, touched: Sequence[str], reader: FileReader) -> dict[str, str]:
    """The instruction files of the folders below `cwd` that the canonical paths
    `touched` (files, or folders a search named) lie in, path → text, outermost
    first, read beneath `cwd` as `read_chain` reads."""
    cwd = os.path.realpath(cwd)
    folders = (p if os.path.isdir(p) else os.path.dirname(p) for p in touched)
    paths = dict.fromkeys(path for f in folders for path in folder_paths(cwd, f))
    return _read(list(paths), reader.within((cwd,)))


def _read(paths: Sequence[str], beneath: FileReader) -> dict[str, str]:
    """`paths` that exist, path → text: the one place instruction files are read. A
    file the reader refuses is named with why, never read; a long one is cut."""
    chain: dict[str, str] = {}
    for path in paths:
        match beneath.read(path, max_bytes=MAX_INSTRUCTION_BYTES, over="cut"):
            case FileRead() as found:
                chain[path] = found.text()
            case ReadRefused(problem="missing" | "directory"):
                continue
            case ReadRefused(reason=reason):
                chain[path] = f"[loopd did not read {os.path.basename(path)}: {reason}]"
    return chain


def repo_root(cwd: str) -> str | None:
    """The nearest folder at or above `cwd` holding `.git`, or None."""
    here = os.path.realpath(cwd)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
