"""Fixtures for the tool tests: a real env over tmp_path, a clock whose sleeps wait
for the test, and a way to declare and run one call the way the engine does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tooltest import Call, GatedClock, Outcome, RecordingProgress

from loopd.engine.ports import ToolCall
from loopd.tools import ToolEnv, ToolRegistry


@pytest.fixture
def clock() -> GatedClock:
    return GatedClock()


@pytest.fixture
async def env(tmp_path: Path, clock: GatedClock) -> AsyncIterator[ToolEnv]:
    tool_env = ToolEnv(roots=(str(tmp_path),), clock=clock)
    yield tool_env
    await tool_env.aclose()


@pytest.fixture
def tools(env: ToolEnv) -> ToolRegistry:
    return ToolRegistry(env)


@pytest.fixture
def call(tools: ToolRegistry) -> Call:
    """Declare then run a call, as the engine does; progress is discarded."""

    async def go(name: str, **args: Any) -> Outcome:
        tool_call = ToolCall(id="c1", name=name, input=args)
        declaration = await tools.declare(tool_call)
        return Outcome(declaration, await tools.run(tool_call, RecordingProgress()))

    return go
