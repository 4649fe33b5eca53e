"""The instruction chain: the workspace's own instruction files, frozen when a
session starts.

`AGENTS.md` (and `AGENT.md`, and `CLAUDE.md` for compatibility) in every folder
from the repository root down to the working directory, outermost first, so the
files closest to the work come last and take precedence, as with the seed's
`LoadAgentMD`; then `.loopd/instructions.md` of the working directory. The chain is
read once into the system prompt, which then never changes for the life of the
session: a file edited later reaches the model as a reminder with the next message
(`reminders`), never as a new prefix, which would defeat the provider's prompt cache
and change the rules under the model mid-session.

Folders below the working directory have instruction files of their own (a package's
`AGENTS.md`), meant for work there. A turn that reads or writes a path in one is
given them then (`folder_paths`, `guide`), with that step's results, each once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

INSTRUCTION_FILES = ("AGENTS.md", "AGENT.md", "CLAUDE.md")
LOCAL_FILE = os.path.join(".loopd", "instructions.md")
MAX_INSTRUCTION_CHARS = 20_000


def chain_paths(cwd: str, repo_root: str | None) -> list[str]:
    """The candidate files, outermost first: each folder from `repo_root` (or, out of
    any repository, the cwd alone) down to `cwd`."""
    folders = [cwd]
    if repo_root is not None and cwd.startswith(repo_root):
        here = cwd
        while here != repo_root:
            parent = os.path.dirname(here)
            if parent == here:
                break
            folders.append(parent)
            here = parent
    paths = [os.path.join(f, name) for f in reversed(folders) for name in INSTRUCTION_FILES]
    return [*paths, os.path.join(cwd, LOCAL_FILE)]


def clip(text: str) -> str:
    if len(text) > MAX_INSTRUCTION_CHARS:
        return text[:MAX_INSTRUCTION_CHARS] + "\n[... truncated ...]"
    return text


def render_chain(chain: Mapping[str, str], cwd: str) -> list[str]:
    """The system prompt's sections for `chain` (path → text, in chain order)."""
    return [
        f"Instructions from {os.path.relpath(path, cwd)}:\n{clip(text).strip()}"
        for path, text in chain.items()
    ]


def reminders(told: Mapping[str, str], now: Mapping[str, str], cwd: str) -> list[str]:
    """What changed in the chain since the model was last told `told`: one reminder
    per file added, changed or removed, with the new text in full."""
    out: list[str] = []
    for path, text in now.items():
        shown = os.path.relpath(path, cwd)
        if path not in told:
            out.append(f"New instructions in {shown} (they apply from now on):\n{clip(text)}")
        elif told[path] != text:
            out.append(f"The instructions in {shown} changed; they now read:\n{clip(text)}")
    for path in told:
        if path not in now:
            shown = os.path.relpath(path, cwd)
            out.append(f"{shown} was removed; its instructions no longer apply.")
    return out


def folder_paths(cwd: str, folder: str) -> list[str]:
    """The candidate files of each folder strictly below `cwd` down to the canonical
    `folder`, outermost first; none for a folder outside `cwd`."""
    if not folder.startswith(cwd.rstrip("/") + "/"):
        return []
    parts = os.path.relpath(folder, cwd).split(os.sep)
    folders = [os.path.join(cwd, *parts[: n + 1]) for n in range(len(parts))]
    return [os.path.join(f, name) for f in folders for name in INSTRUCTION_FILES]


def guide(path: str, text: str, cwd: str) -> str:
    """The reminder for a folder's instruction file the turn has just entered."""
    shown = os.path.relpath(path, cwd)
    where = os.path.dirname(shown)
    return f"Instructions in {shown} (they apply to work in {where}/):\n{clip(text).strip()}"
