"""Holding a native turn's effects until its checkpoint is recorded.

With checkpoints on, a native turn asks the model while the prompt's checkpoint is
still being taken (`loopd.sessions.rewind.HoldsEffects`). Every change the turn
makes goes through its tools (bash, `!` commands, the editor's files and terminals,
MCP tools, and a child agent's calls, which run on the same tools) or its done
checks (criteria are commands), so holding those two is enough: `run` awaits the
hold first, then runs. Declaring a call (reading, to show a diff) and asking for
approval are not held: neither changes a file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from loopd.engine.done import Criterion, DoneChecks, DoneSet, DoneState
from loopd.engine.ports import Declaration, ToolBox, ToolCall, ToolProgress, ToolResult
from loopd.protocol.model import ToolSpec
from loopd.protocol.verification import CriterionResult, ProtectedWrites

Hold = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class HeldTools:
    tools: ToolBox
    hold: Hold

    def specs(self) -> Sequence[ToolSpec]:
        return self.tools.specs()

    async def declare(self, call: ToolCall) -> Declaration:
        return await self.tools.declare(call)

    async def refusal(self, call: ToolCall) -> str | None:
        return await self.tools.refusal(call)

    async def run(self, call: ToolCall, progress: ToolProgress) -> ToolResult:
        await self.hold()
        return await self.tools.run(call, progress)


@dataclass(frozen=True, slots=True)
class HeldDone:
    checks: DoneChecks
    hold: Hold

    @property
    def done(self) -> DoneSet:
        return self.checks.done

    @property
    def state(self) -> DoneState:
        return self.checks.state

    async def run(self, criterion: Criterion) -> CriterionResult:
        await self.hold()
        return await self.checks.run(criterion)

    def write_seq(self) -> int:
        return self.checks.write_seq()

    async def begin_turn(self) -> None:
        await self.checks.begin_turn()

    async def protected_writes(self) -> ProtectedWrites:
        return await self.checks.protected_writes()
