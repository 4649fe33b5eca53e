"""Where loopd finds the programs it runs itself, outside any sandbox: the one
resolver (`find_program`) for rg, bwrap, unshare, sh, env, the foreign CLIs
(claude, codex), ACP child agents, MCP stdio servers and the shell of the tiers that
contain no files (netns, none).

A program found in the workspace is the repository's program: it would run outside
the sandbox, with loopd's environment (a repository's `rg` got the API key on a
plan-mode read). So a program is looked for:

- in absolute PATH entries only: `.`, a relative entry and the empty one a stray
  `:` makes all name whatever folder loopd or the child runs in;
- never beneath a workspace root (`outside`), by its own path or by where a
  symlink leads;
- given with a slash, it must be absolute (a relative one names a file in the
  folder loopd happens to run in), and is checked against `outside` the same way.

`clean_path` is the same rule as a PATH for a child to search in turn, and
`program_env` gives it to every program found here. A unit test fails if
`shutil.which` is called anywhere else in loopd, or a program is started by a bare
name.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping


def clean_path(search_path: str | None, outside: Iterable[str] = ()) -> str:
    """`search_path` (None: `os.defpath`) without relative or empty entries and
    without entries beneath `outside`; `os.defpath`'s absolute entries when nothing
    is left (an empty PATH would search the current folder)."""
    roots = _canonical(outside)
    given = os.defpath if search_path is None else search_path
    kept = [
        p
        for p in given.split(os.pathsep)
        if os.path.isabs(p) and not _beneath(p, roots) and not _beneath(os.path.realpath(p), roots)
    ]
    if not kept:
        kept = [p for p in os.defpath.split(os.pathsep) if os.path.isabs(p)]
    return os.pathsep.join(dict.fromkeys(kept))


def find_program(
    command: str, search_path: str | None, *, outside: Iterable[str] = ()
) -> str | None:
    """The absolute path `command` runs as, or None: not found, or found only where
    it must not come from (see the module's rules). `search_path` is a PATH string
    (None: `os.defpath`, never the process's PATH by accident)."""
    roots = _canonical(outside)
    if "/" in command:
        return command if os.path.isabs(command) and _usable(command, roots) else None
    for entry in clean_path(search_path, roots).split(os.pathsep):
        candidate = os.path.join(entry, command)
        if _usable(candidate, roots):
            return candidate
    return None


def program_env(env: Mapping[str, str], outside: Iterable[str] = ()) -> dict[str, str]:
    """`env` for a program loopd runs outside the sandbox, its PATH `clean_path`'s:
    what that program looks up in turn (`#!/usr/bin/env node` of a Node CLI, the
    tools it runs itself) is not the workspace's either. An editor's PATH with
    `./node_modules/.bin` put a repository's `node` under Codex's CLI."""
    return {**env, "PATH": clean_path(env.get("PATH"), outside)}


def process_path() -> str:
    """loopd's own PATH, for the programs it looks up for itself (rg, bwrap)."""
    return os.environ.get("PATH", os.defpath)


def _usable(path: str, roots: tuple[str, ...]) -> bool:
    if _beneath(path, roots) or _beneath(os.path.realpath(path), roots):
        return False
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and os.access(path, os.X_OK)


def _canonical(roots: Iterable[str]) -> tuple[str, ...]:
    return tuple(os.path.realpath(r) for r in roots)


def _beneath(path: str, roots: tuple[str, ...]) -> bool:
    normal = os.path.normpath(path)
    return any(normal == r or normal.startswith(r.rstrip("/") + "/") for r in roots)
