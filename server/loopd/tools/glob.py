"""`glob`: find files by name pattern under a directory.

Results are sorted so two identical calls give identical text (the loop's repeat
detection and a person comparing turns both rely on that), capped so a `**` over a
dependency tree cannot flood the context, and `.git` is skipped because its contents
are never what the model is looking for.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, ClassVar

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import Location, ToolKind
from loopd.tools.base import Args, failure
from loopd.tools.env import ToolEnv

SEARCH_ROOT = {
    "type": "string",
    "minLength": 1,
    "description": "Directory to search from; default the working directory.",
}


def search_root(args: Args, env: ToolEnv) -> str:
    return env.resolve(args.get("path", "."))


class Glob:
    name = "glob"
    kind: ToolKind = "search"
    description = (
        "Find files whose path matches a glob pattern, relative to path (default the "
        "working directory): `*.py`, `src/**/*.ts`, `**/test_*.py`. Results are sorted "
        "and capped; directories end with `/`; .git is skipped."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern."},
            "path": SEARCH_ROOT,
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        pattern = _pattern(args)
        root = search_root(args, env)
        return Declaration(
            title=f"Find `{pattern}` in {env.display(root)}",
            kind=self.kind,
            reads=(root,),
            locations=(Location(root),),
        )

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        pattern = _pattern(args)
        root = search_root(args, env)
        if not await asyncio.to_thread(os.path.isdir, root):
            return failure(f"{env.display(root)} is not a directory")
        found = await asyncio.to_thread(_glob, root, pattern)
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
    return pattern


def _glob(root: str, pattern: str) -> list[tuple[str, bool]]:
    base = Path(root)
    found = [
        (str(p), p.is_dir())
        for p in base.glob(pattern)
        if p != base and ".git" not in p.relative_to(base).parts
    ]
    return sorted(found)
