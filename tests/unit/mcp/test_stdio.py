"""A stdio MCP server as a real child process: the handshake, paged tool lists,
calls and their results, timeouts, failures to start, and cleanup on close."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from loopd.engine.ports import ToolCall, ToolResult
from loopd.engine.schedule import ToolExecution, schedule
from loopd.mcp import McpServers, McpTool
from loopd.mcp.config import McpServerConfig
from loopd.protocol.events import TextBlock
from loopd.tools.edit import Write
from loopd.tools.env import ToolEnv
from loopd.tools.read import Read
from tests.unit.mcp.conftest import FAKE_MCP, HeldClock, connected, stdio
from tests.unit.tools.tooltest import GatedClock, RecordingProgress


def tool(servers: McpServers, name: str) -> McpTool:
    return next(t for t in servers.tools if t.name == name)


async def run(servers: McpServers, name: str, tmp_path: Path, /, **args: object) -> ToolResult:
    return await tool(servers, name).run(args, ToolEnv(roots=(str(tmp_path),)), RecordingProgress())


async def test_every_page_of_tools_is_offered_under_namespaced_names() -> None:
    async with connected([stdio("fake")]) as servers:
        names = [t.name for t in servers.tools]
        assert names == [
            f"mcp__fake__{n}"
            for n in (
                "echo",
                "fail",
                "hang",
                "env",
                "spawn",
                "picture",
                "grow",
                "publish",
                "retract",
            )
        ]
        assert servers.problems == () and servers.report() == ""
        echo = tool(servers, "mcp__fake__echo")
        assert echo.description == "Echo the text back."
        assert echo.input_schema["required"] == ["text"]


async def test_a_call_round_trips_its_arguments_and_content(tmp_path: Path) -> None:
    async with connected([stdio("fake")]) as servers:
        result = await run(servers, "mcp__fake__echo", tmp_path, text="hi there")
    assert result == ToolResult(
        output="echo: hi there",
        content=(TextBlock("echo: hi there"),),
        raw_output={"text": "hi there"},
    )


async def test_a_declaration_names_server_and_tool_and_touches_nothing(tmp_path: Path) -> None:
    async with connected([stdio("fake")]) as servers:
        env = ToolEnv(roots=(str(tmp_path),))
        echo = await tool(servers, "mcp__fake__echo").declare({"text": "x"}, env)
        other = await tool(servers, "mcp__fake__fail").declare({}, env)
    assert (echo.title, echo.kind) == ("fake: echo", "read")  # readOnlyHint, closed world
    assert (other.title, other.kind) == ("fake: fail", "other")
    assert echo.reads == echo.writes == () and echo.command is None and not echo.network


async def test_a_tool_that_declares_nothing_is_scheduled_as_touching_everything(
    tmp_path: Path,
) -> None:
    """The real declarations: `fail` (no hint) may write anything, so it runs alone;
    `echo` (read-only hint) may read anything, so it runs beside a read, not a write."""
    async with connected([stdio("fake")]) as servers:
        env = ToolEnv(roots=(str(tmp_path),))
        calls = [
            (tool(servers, "mcp__fake__fail"), {}),
            (Read(), {"path": "a.txt"}),
            (tool(servers, "mcp__fake__echo"), {"text": "x"}),
            (Write(), {"path": "b.txt", "content": "b"}),
        ]
        execs = [
            ToolExecution(i, ToolCall(f"c{i}", t.name, args), await t.declare(args, env))
            for i, (t, args) in enumerate(calls)
        ]
    grouped = [[ex.index for ex in group] for group in schedule(execs, 8)]
    assert grouped == [[0], [1, 2], [3]]


async def test_a_tool_error_is_an_error_result(tmp_path: Path) -> None:
    async with connected([stdio("fake")]) as servers:
        result = await run(servers, "mcp__fake__fail", tmp_path)
    assert result.is_error and result.output == "it failed on purpose"


async def test_a_call_without_an_answer_times_out_as_an_error_result(tmp_path: Path) -> None:
    clock = HeldClock()
    async with connected([stdio("fake")], clock=clock) as servers:
        call = asyncio.create_task(run(servers, "mcp__fake__hang", tmp_path))
        await clock.expire_next()
        result = await asyncio.wait_for(call, 10)
        assert result.is_error
        assert result.output == "The MCP server 'fake' failed: no answer to tools/call within 20s"
        after = await run(servers, "mcp__fake__echo", tmp_path, text="still here")
    assert after.output == "echo: still here"


async def test_provider_keys_do_not_reach_the_server_unless_passed(tmp_path: Path) -> None:
    base = {"PATH": os.environ["PATH"], "ANTHROPIC_API_KEY": "sk-secret", "HOME": "/home/x"}
    config = stdio("fake", env={"GIVEN": "by the editor"})
    async with connected([config], base_env=base) as servers:
        key = await run(servers, "mcp__fake__env", tmp_path, name="ANTHROPIC_API_KEY")
        given = await run(servers, "mcp__fake__env", tmp_path, name="GIVEN")
        home = await run(servers, "mcp__fake__env", tmp_path, name="HOME")
    assert key.output == "ANTHROPIC_API_KEY="
    assert given.output == "GIVEN=by the editor"
    assert home.output == "HOME=/home/x"


LINUX = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


@pytest.mark.parametrize(
    ("config", "why"),
    [
        (McpServerConfig("gone", command="/nonexistent/mcp-server"), "could not start"),
        (stdio("crashy", "--crash"), "exited with code 3: boom: the fake server was told to crash"),
    ],
)
async def test_a_server_that_cannot_start_is_reported_and_the_rest_still_work(
    tmp_path: Path, config: McpServerConfig, why: str
) -> None:
    async with connected([config, stdio("fake")]) as servers:
        assert {t.name.split("__")[1] for t in servers.tools} == {"fake"}
        [problem] = servers.problems
        assert problem.startswith(f"{config.name}: ") and why in problem
        assert problem in servers.report()
        result = await run(servers, "mcp__fake__echo", tmp_path, text="ok")
    assert result.output == "echo: ok"


@LINUX
async def test_a_server_that_never_answers_initialize_is_reported_and_killed() -> None:
    clock = GatedClock()
    clock.open()  # every timeout passes at once
    async with connected([stdio("quiet", "--silent")], clock=clock) as servers:
        pass
    assert servers.problems == ("quiet: no answer to initialize within 20s",)
    assert servers.tools == () and servers.clients == []
    assert not [pid for pid in fake_servers("--silent") if alive(pid)]


@LINUX
async def test_closing_kills_the_server_and_what_it_spawned(tmp_path: Path) -> None:
    async with connected([stdio("fake")]) as servers:
        grandchild = int((await run(servers, "mcp__fake__spawn", tmp_path)).output)
        [client] = servers.clients
        server = client.transport.proc  # type: ignore[attr-defined]
        assert alive(grandchild)
    assert server.returncode is not None
    for _ in range(500):
        if not alive(grandchild):
            break
        await asyncio.sleep(0.002)
    assert not alive(grandchild)


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def fake_servers(flag: str) -> list[int]:
    """The pids of fake MCP servers started with `flag`, zombies included."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if FAKE_MCP.encode() in argv and flag.encode() in argv:
            found.append(int(cmdline.parent.name))
    return found
