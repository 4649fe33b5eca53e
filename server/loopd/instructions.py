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
from pathlib import Path

from loopd.context.instructions import chain_paths, render_chain

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


def read_chain(cwd: str) -> dict[str, str]:
    """The instruction files that exist now, path → text, outermost first."""
    chain: dict[str, str] = {}
    cwd = os.path.realpath(cwd)
    for path in chain_paths(cwd, repo_root(cwd)):
        try:
            chain[path] = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
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
