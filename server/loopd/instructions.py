"""The native engine's system prompt: who it is, where it works, and the workspace's
own instructions.

Instruction files are read once, when a session opens, and frozen into the prompt:
a file that changes mid-session must not silently rewrite the prefix every request
shares (that would also defeat prompt caching). `AGENTS.md` is the cross-tool
convention; `AGENT.md`, `CLAUDE.md` and `.loopd/instructions.md` are read too. Each
file is capped so a huge one cannot crowd out the conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

INSTRUCTION_FILES = ("AGENTS.md", "AGENT.md", "CLAUDE.md", ".loopd/instructions.md")
MAX_INSTRUCTION_CHARS = 20_000

BASE = """You are loopd, a coding agent working inside the user's editor.

Work in the workspace at {cwd}{more_roots}. Use the tools to read before you change
anything, keep edits minimal and exact, and run the project's own checks when you
can. Paths you pass to tools may be relative to the workspace. When a tool fails,
read its error and try a different approach rather than repeating the same call.
Keep the todo list (the `plan` tool) current on multi-step work. Answer in
concise Markdown."""


def system_prompt(cwd: str, roots: Sequence[str]) -> str:
    others = [r for r in roots if r != cwd]
    more = f" (also: {', '.join(others)})" if others else ""
    sections = [BASE.format(cwd=cwd, more_roots=more)]
    for name in INSTRUCTION_FILES:
        path = Path(cwd) / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if len(text) > MAX_INSTRUCTION_CHARS:
            text = text[:MAX_INSTRUCTION_CHARS] + "\n[... truncated ...]"
        sections.append(f"Instructions from {name}:\n{text.strip()}")
    return "\n\n".join(sections)
