"""`read`: a window of a text file, with line numbers.

Line numbers are there so the model can cite and edit by line without counting, and
the caps are there because a file is the easiest way to flood the context: the
window is bounded in lines, in characters per line and in characters overall, and
whenever something is cut the result says what and how to get the rest.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, ClassVar

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.policy.beneath import file_kind
from loopd.protocol.events import Location, ToolKind
from loopd.tools.base import Args, failure
from loopd.tools.env import ToolEnv
from loopd.tools.schema import arguments, text


class Read:
    name = "read"
    kind: ToolKind = "read"
    description = (
        "Read a text file. Lines come numbered (`   12\\tcode`); the numbers are not part "
        "of the file. By default reads from the start up to a line cap; use offset (first "
        "line, 1-based) and limit (number of lines) for a window of a long file. Refuses "
        "binary files. Prefer this to cat/head/tail in bash."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(
        ["path"],
        path=text("File to read, relative to the working directory or absolute."),
        offset={"type": "integer", "minimum": 1, "description": "First line, 1-based."},
        limit={"type": "integer", "minimum": 1, "description": "Most lines to return."},
    )

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        path = env.resolve(args["path"])
        return Declaration(
            title=f"Read {env.display(path)}",
            kind=self.kind,
            reads=(path,),
            locations=(Location(path, args.get("offset", 1)),),
        )

    async def refusal(self, args: Args, env: ToolEnv) -> str | None:
        """A path that is no file to read (a folder, a FIFO, a socket, a device), said
        before the person is asked about reading it (outside the folders): the run
        would refuse it. A missing one is the run's to judge: an editor may hold it
        unsaved."""
        path = env.resolve(args["path"])
        try:
            kind = file_kind((await asyncio.to_thread(os.stat, path)).st_mode)
        except OSError:
            return None
        if kind == "regular file":
            return None
        return f"{env.display(path)} is a {kind}, not a regular file; nothing was read"

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        path = env.resolve(args["path"])
        text = await env.files.read_text(path)
        env.reads.saw(path, text)
        lines = text.splitlines()
        offset: int = args.get("offset", 1)
        limit: int = args.get("limit", env.limits.read_default_lines)
        location = (Location(path, offset),)
        if not lines:
            return ToolResult(output=f"{env.display(path)} is empty.", locations=location)
        if offset > len(lines):
            return failure(
                f"offset {offset} is past the end of {env.display(path)}, "
                f"which has {len(lines)} lines"
            )
        window = lines[offset - 1 : offset - 1 + limit]
        output, shown = _render(window, offset, env)
        last = offset + shown - 1
        if last < len(lines):
            output += (
                f"\n[Showing lines {offset}-{last} of {len(lines)}. "
                f"Use offset={last + 1} to read more.]"
            )
        return ToolResult(output=output, locations=location)


def _render(window: list[str], first: int, env: ToolEnv) -> tuple[str, int]:
    """Numbered lines, each cut at the line cap, stopping before the overall cap.
    Returns the text and how many lines it holds (at least one)."""
    max_line, budget = env.limits.read_max_line_chars, env.limits.read_max_chars
    out: list[str] = []
    used = 0
    for number, line in enumerate(window, start=first):
        if len(line) > max_line:
            line = f"{line[:max_line]} [... line cut, {len(line) - max_line} more characters]"
        rendered = f"{number:6}\t{line}"
        used += len(rendered) + 1
        if out and used > budget:
            break
        out.append(rendered)
    return "\n".join(out), len(out)
