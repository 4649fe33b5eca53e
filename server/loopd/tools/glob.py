"""`glob`: find files by name pattern under a directory.

Results are sorted so two identical calls give identical text (the loop's repeat
detection and a person comparing turns both rely on that), capped so a `**` over a
dependency tree cannot flood the context, and `.git` is skipped because its contents
are never what the model is looking for. What `.gitignore` ignores is not listed
(read in Python by `gitignore`, never by running git), as grep does not search it.

The search stays beneath the declared directory, which is what the policy judged: a
pattern may not climb with `..` (the directory to search is `path`, declared and
decided like any other read), and the walk never enters a symlinked directory. It
walks iteratively (`loopd.walk`: any depth) and checks each directory is the one its
parent listed, so a directory swapped for a symlink while it runs is not followed
either. A symlink inside is listed by its own name. Patterns are git's wildmatch
(`loopd.tools.wildmatch`), matched in bounded time whatever the model sends.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, ClassVar

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import Location, ToolKind
from loopd.protocol.reading import FileReader
from loopd.tools.base import Args, failure
from loopd.tools.env import ToolEnv
from loopd.tools.gitignore import Ignore, inherited, is_within, read_ignore_file
from loopd.tools.schema import arguments, text
from loopd.tools.wildmatch import BadPattern, path_pattern
from loopd.walk import walk

SEARCH_ROOT = text("Directory to search from; default the working directory.")


def search_root(args: Args, env: ToolEnv) -> str:
    return env.resolve(args.get("path", "."))


def searching(title: str, root: str) -> Declaration:
    """What a search under `root` asks of the policy: to read there, shown there."""
    return Declaration(title=title, kind="search", reads=(root,), locations=(Location(root),))


class Glob:
    name = "glob"
    kind: ToolKind = "search"
    description = (
        "Find files whose path matches a glob pattern, relative to path (default the "
        "working directory): `*.py`, `src/**/*.ts`, `**/test_*.py`. Results are sorted "
        "and capped; directories end with `/`; .git and what .gitignore ignores are skipped."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(
        ["pattern"], pattern=text("Glob pattern."), path=SEARCH_ROOT
    )

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        pattern = _pattern(args)
        root = search_root(args, env)
        return searching(f"Find `{pattern}` in {env.display(root)}", root)

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        pattern = _pattern(args)
        root = search_root(args, env)
        if not await asyncio.to_thread(os.path.isdir, root):
            return failure(f"{env.display(root)} is not a directory")
        top = next((r for r in env.roots if is_within(root, r)), root)
        reader = env.reader.within((*env.roots, root))  # an approved folder outside too
        found = await asyncio.to_thread(_glob, root, pattern, top, reader)
        cap = env.limits.glob_max_results
        if not found:
            return ToolResult(output=f"No files match `{pattern}` in {env.display(root)}.")
        lines = [env.display(p) + ("/" if is_dir else "") for p, is_dir in found[:cap]]
        if len(found) > cap:
            lines.append(
                f"[Showing the first {cap} of {len(found)} matches; narrow the pattern or path.]"
            )
        return ToolResult(output="\n".join(lines))


def _pattern(args: Args) -> str:
    pattern: str = args["pattern"]
    if os.path.isabs(pattern):
        raise ToolInputError("`pattern` must be relative; pass the directory to search as `path`")
    if ".." in pattern.split("/"):
        raise ToolInputError(
            "`pattern` may not climb with `..`; pass the directory to search as `path`"
        )
    try:
        path_pattern(pattern.split("/"))
    except BadPattern as err:
        raise ToolInputError(f"`pattern` cannot be used: {err}") from None
    return pattern


def _glob(root: str, pattern: str, top: str, reader: FileReader) -> list[tuple[str, bool]]:
    """(path, is a directory) for every entry under `root` whose relative path
    matches `pattern` and that `.gitignore` does not ignore (files up to `top`
    count), without following a symlink to a directory."""
    parts: list[str] = []
    for part in (p for p in pattern.split("/") if p not in ("", ".")):
        if not (part == "**" and parts[-1:] == ["**"]):
            parts.append(part)
    wanted = path_pattern(parts)  # `_pattern` checked it compiles
    found: list[tuple[str, bool]] = []
    ignores: dict[tuple[str, ...], Ignore] = {(): inherited(root, top, reader)}
    for folder in walk(root):
        here = folder.rel
        text = read_ignore_file(reader, os.path.join(folder.path, ".gitignore"))
        ignore = ignores.pop(here).extended(here, text)
        folder.dirs[:] = [
            d
            for d in folder.dirs
            if d != ".git"
            and wanted.may_hold((*here, d))
            and not ignore.ignored((*here, d), is_dir=True)
        ]
        ignores.update({(*here, d): ignore for d in folder.dirs})
        entries = [(d, True) for d in folder.dirs]
        entries += [(f, False) for f in folder.files if not ignore.ignored((*here, f), False)]
        for name, is_dir in entries:
            if wanted.match((*here, name)):
                found.append((os.path.join(folder.path, name), is_dir))
    return sorted(found)
