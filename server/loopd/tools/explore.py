"""`explore`: answer one question with a read-only child turn (see
`loopd.engine.delegate`, which decides what the child may do).

The tool is the bridge: it hands the child the session's looking tools (a registry
of read, glob, grep and bash over the session's `ToolEnv` as a child sees it: the
same sandbox, roots, secrets rules and write ledger, its own read bookmarks), the
session's policy, and the runtime the child runs on; it shows
the child's activity as this one call's content while it runs, and returns the
report with the paths relative to the workspace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from loopd.engine.delegate import ChildRuntime, DelegateLimits, DelegateResult, explore
from loopd.engine.ports import Declaration, Policy, ToolProgress, ToolResult
from loopd.policy.commands import is_safe_command
from loopd.protocol.events import TextBlock, ToolKind
from loopd.tools.base import Args, Tool
from loopd.tools.env import ToolEnv
from loopd.tools.registry import ToolRegistry
from loopd.tools.schema import arguments, text


@dataclass(eq=False)
class Explore:
    """`tools` is the session's built-in tools without `explore` itself: that
    absence is what makes nesting impossible (the child is offered only the looking
    ones; see `loopd.engine.delegate`). Each run gets a registry of them over
    `ToolEnv.for_child`."""

    child: ChildRuntime
    tools: Sequence[Tool]
    policy: Policy
    limits: DelegateLimits = DelegateLimits()  # noqa: RUF009 - frozen

    name: ClassVar[str] = "explore"
    kind: ClassVar[ToolKind] = "search"
    description: ClassVar[str] = (
        "Delegate ONE self-contained question about the workspace to a read-only "
        "explorer that reads, globs, greps and runs read-only commands in its own "
        "context, then reports back: its answer, plus the files it read and any it "
        "could not. Use it for broad searches whose details you do not need in your "
        "own context (where is X handled? which modules use Y?). It cannot change "
        "anything and cannot see this conversation: put everything it needs in the "
        "question."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(
        ["question"], question=text("The question, complete in itself.")
    )

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        question: str = args["question"]
        first = question.strip().splitlines()[0] if question.strip() else question
        short = first if len(first) <= 80 else first[:77] + "..."
        # It looks at the workspace, and only there: each of the child's calls is
        # still decided on its own (see `loopd.engine.delegate`).
        return Declaration(title=f"Explore: {short}", kind=self.kind, reads=env.roots)

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        sandboxed = env.sandbox.tier != "none"
        result = await explore(
            args["question"],
            child=self.child,
            tools=ToolRegistry(env.for_child(), self.tools),
            policy=self.policy,
            read_only_command=lambda command: is_safe_command(command, sandboxed=sandboxed),
            clock=env.clock,
            cwd=env.cwd,
            progress=progress,
            limits=self.limits,
        )
        report = _relative(result, env)
        text = report.render()
        return ToolResult(
            output=text,
            content=(TextBlock(text),),
            raw_output={"explore": report.to_json() | {"child": self.child.identity()}},
            spent=result.usage,  # the parent turn pays for its child
            cost_usd=result.cost_usd,
        )


def _relative(result: DelegateResult, env: ToolEnv) -> DelegateResult:
    def shown(paths: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(env.display(p) for p in paths)

    return replace(
        result,
        read=shown(result.read),
        wrote=shown(result.wrote),
        unread=shown(result.unread),
        unwritten=shown(result.unwritten),
    )
