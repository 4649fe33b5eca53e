"""`plan`: the model's todo list for the session.

Each call replaces the whole list rather than patching it: the model restates the
plan it now holds, so the person never sees a list assembled from edits that went
missing. The new list is kept in the env and handed to `env.on_plan`, which the
session layer turns into a `PlanUpdated` event.
"""

from __future__ import annotations

from typing import Any, ClassVar

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.protocol.events import PlanEntry, ToolKind
from loopd.tools.base import Args
from loopd.tools.env import ToolEnv
from loopd.tools.schema import arguments, text

_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class Plan:
    name = "plan"
    kind: ToolKind = "think"
    description = (
        "Set the plan for the current task: the complete list of steps, each with a "
        "status (pending, in_progress, completed) and optionally a priority (high, "
        "medium, low). Every call replaces the whole list, so always send all entries. "
        "Keep one entry in_progress at a time and mark entries completed as you finish "
        "them. Use it for work with several steps; skip it for a single quick change."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(
        ["entries"],
        entries={
            "type": "array",
            "items": arguments(
                ["content", "status"],
                content=text(),
                status={"type": "string", "enum": list(_MARKS)},
                priority={"type": "string", "enum": ["high", "medium", "low"]},
            ),
        },
    )

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        return Declaration(title="Update plan", kind=self.kind)

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        entries = tuple(
            PlanEntry(e["content"], e.get("priority", "medium"), e["status"])
            for e in args["entries"]
        )
        await env.set_plan(entries)
        done = sum(e.status == "completed" for e in entries)
        lines = [f"Plan updated ({done} of {len(entries)} completed):"]
        lines += [f"{_MARKS[e.status]} {e.content}" for e in entries]
        return ToolResult(output="\n".join(lines))
