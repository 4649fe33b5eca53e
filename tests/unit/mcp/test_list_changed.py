"""`notifications/tools/list_changed`: the server's tools are listed again and the
session's registry offers the new set from the next turn on (the running turn keeps
its tools), over a real stdio child and a real HTTP server."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.engine.ports import ToolCall
from loopd.testing.fake_mcp import FakeMcpHttpServer
from loopd.tools.env import ToolEnv
from loopd.tools.registry import ToolRegistry, builtin_tools
from tests.unit.mcp.conftest import connected, served, stdio
from tests.unit.tools.tooltest import RecordingProgress


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_changed_list_is_offered_from_the_next_turn(transport: str, tmp_path: Path) -> None:
    with FakeMcpHttpServer() as web:
        config = served(transport, web)
        async with connected([config]) as servers:
            registry = ToolRegistry(ToolEnv(roots=(str(tmp_path),)), servers.tools)
            servers.on_change = registry.swap
            before = {s.name for s in registry.specs()}
            grown = await registry.run(ToolCall("c1", "mcp__srv__grow", {}), RecordingProgress())
            this_turn = {s.name for s in registry.specs()}
            registry.at_turn_start()
            after = {s.name for s in registry.specs()}
            added = await registry.run(ToolCall("c2", "mcp__srv__added", {}), RecordingProgress())
            echo = await registry.run(
                ToolCall("c3", "mcp__srv__echo", {"text": "x"}), RecordingProgress()
            )
    assert grown.output == "grown"
    assert "mcp__srv__added" not in before
    assert this_turn == before, "the running turn keeps the tools it started with"
    assert after == before | {"mcp__srv__added"}
    assert added.output == "the added tool ran" and not added.is_error
    assert echo.output == "echo: x"  # the tools that stayed are the same ones


async def test_a_changed_name_taken_by_a_built_in_is_not_offered(tmp_path: Path) -> None:
    taken = ("mcp__srv__added",)
    async with connected([stdio("srv")], reserved=taken) as servers:
        registry = ToolRegistry(ToolEnv(roots=(str(tmp_path),)), servers.tools)
        servers.on_change = registry.swap
        await registry.run(ToolCall("c1", "mcp__srv__grow", {}), RecordingProgress())
        names = [t.name for t in servers.tools]
    assert "mcp__srv__added" not in names and "mcp__srv__grow" in names


def test_the_registry_swaps_only_the_tools_it_was_given(tmp_path: Path) -> None:
    read, write, *_ = builtin_tools()
    registry = ToolRegistry(ToolEnv(roots=(str(tmp_path),)), (read,))
    registry.swap((), (write,))
    registry.swap((builtin_tools()[0],), ())  # an equal tool, not the same one: stays
    assert [s.name for s in registry.specs()] == ["read"]
    registry.at_turn_start()
    assert [s.name for s in registry.specs()] == ["read", "write"]
    registry.swap((write,), ())
    registry.at_turn_start()
    assert [s.name for s in registry.specs()] == ["read"]
