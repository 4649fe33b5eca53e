"""A streamable HTTP MCP server on loopback: JSON and SSE replies, the session id
and protocol version on every later request, the editor's headers, DELETE on close,
and a server that is not there."""

from __future__ import annotations

import asyncio
from pathlib import Path

from loopd.mcp.client import PROTOCOL_VERSION
from loopd.mcp.config import McpServerConfig
from loopd.testing.fake_mcp import SESSION, FakeMcpHttpServer
from loopd.tools.env import ToolEnv
from tests.unit.mcp.conftest import HeldClock, connected
from tests.unit.tools.tooltest import RecordingProgress


async def test_tools_listed_by_json_and_called_by_sse(tmp_path: Path) -> None:
    env = ToolEnv(roots=(str(tmp_path),))
    with FakeMcpHttpServer() as fake:
        config = McpServerConfig("web", url=fake.url, headers={"Authorization": "Bearer t"})
        async with connected([config]) as servers:
            assert [t.name for t in servers.tools][:2] == ["mcp__web__echo", "mcp__web__fail"]
            echo, fail = servers.tools[0], servers.tools[1]
            said = await echo.run({"text": "over http"}, env, RecordingProgress())
            failed = await fail.run({}, env, RecordingProgress())
        assert said.output == "echo: over http" and not said.is_error
        assert said.raw_output == {"text": "over http"}
        assert failed.is_error and failed.output == "it failed on purpose"
        methods = [m for m, _ in fake.requests]
        assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"]
        assert fake.deleted == [SESSION]
    for method, headers in fake.requests:
        assert headers["authorization"] == "Bearer t"
        assert headers["accept"] == "application/json, text/event-stream"
        if method != "initialize":
            assert headers["mcp-session-id"] == SESSION
            assert headers["mcp-protocol-version"] == PROTOCOL_VERSION


async def test_a_call_that_hangs_times_out_and_the_session_goes_on(tmp_path: Path) -> None:
    env = ToolEnv(roots=(str(tmp_path),))
    clock = HeldClock()
    with FakeMcpHttpServer() as fake:
        async with connected([McpServerConfig("web", url=fake.url)], clock=clock) as servers:
            tools = {t.name: t for t in servers.tools}
            hanging = tools["mcp__web__hang"].run({}, env, RecordingProgress())
            call = asyncio.create_task(hanging)
            await clock.expire_next()
            result = await call
            after = await tools["mcp__web__echo"].run({"text": "x"}, env, RecordingProgress())
            fake.closing.set()
    assert result.is_error and "no answer to tools/call within 20s" in result.output
    assert after.output == "echo: x"


async def test_a_server_that_is_not_listening_is_reported() -> None:
    with FakeMcpHttpServer() as fake:
        url = fake.url  # the port is free again once it closes
    async with connected([McpServerConfig("web", url=url)]) as servers:
        [problem] = servers.problems
    assert servers.tools == ()
    assert problem.startswith("web: ") and "ConnectError" in problem


async def test_an_expired_session_is_initialised_again_and_the_call_retried(
    tmp_path: Path,
) -> None:
    env = ToolEnv(roots=(str(tmp_path),))
    with FakeMcpHttpServer() as fake:
        async with connected([McpServerConfig("web", url=fake.url)]) as servers:
            echo = next(t for t in servers.tools if t.name == "mcp__web__echo")
            fake.expire()
            said = await echo.run({"text": "again"}, env, RecordingProgress())
            fake.expire()
            listed = await servers.clients[0].list_tools()
        calls = [(m, h.get("mcp-session-id")) for m, h in fake.requests]
    assert said.output == "echo: again" and not said.is_error
    assert len(listed) == len(servers.tools)
    assert calls[-12:] == [
        ("tools/call", "fake-session-1"),  # 404
        ("initialize", None),
        ("notifications/initialized", "fake-session-2"),
        ("tools/call", "fake-session-2"),
        ("tools/list", "fake-session-2"),  # 404
        ("initialize", None),
        ("notifications/initialized", "fake-session-3"),
        *[("tools/list", "fake-session-3")] * 5,  # every page, in the new session
    ]


async def test_a_server_that_forgets_every_session_is_retried_only_once(tmp_path: Path) -> None:
    env = ToolEnv(roots=(str(tmp_path),))
    with FakeMcpHttpServer() as fake:
        async with connected([McpServerConfig("web", url=fake.url)]) as servers:
            echo = next(t for t in servers.tools if t.name == "mcp__web__echo")
            fake.forgetful = True
            said = await echo.run({"text": "lost"}, env, RecordingProgress())
        methods = [m for m, _ in fake.requests]
    assert said.is_error
    assert said.output == "The MCP server 'web' failed: the server ended the session (HTTP 404)"
    assert methods.count("initialize") == 2  # the start, and the one new handshake
    assert methods[-3:] == ["tools/call", "initialize", "notifications/initialized"]
