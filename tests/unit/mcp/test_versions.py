"""The protocol revision the server answers `initialize` with: one loopd knows is
spoken (and sent on every later HTTP request); any other refuses the server, which
is reported as not started, over a real stdio child and a real HTTP server."""

from __future__ import annotations

import pytest

from loopd.mcp.client import KNOWN_VERSIONS
from loopd.mcp.config import McpServerConfig
from loopd.testing.fake_mcp import FakeMcpHttpServer
from tests.unit.mcp.conftest import connected, served, stdio

UNKNOWN = "2099-01-01"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_unknown_revision_refuses_the_server(transport: str) -> None:
    with FakeMcpHttpServer(version=UNKNOWN) as web:
        async with connected(
            [served(transport, web, f"--version={UNKNOWN}"), stdio("ok")]
        ) as servers:
            problems, names = servers.problems, {t.client.name for t in servers.tools}
            report = servers.report()
        methods = [m for m, _ in web.requests]
    assert names == {"ok"}
    assert problems == (
        f"srv: the server speaks MCP revision {UNKNOWN!r}, which loopd does not know "
        f"(it knows {', '.join(sorted(KNOWN_VERSIONS))})",
    )
    assert "- srv: the server speaks MCP revision '2099-01-01'" in report
    if transport == "http":
        assert methods == ["initialize"]  # nothing after, and no session left open
        assert web.deleted == ["fake-session-1"]


async def test_an_older_known_revision_is_spoken() -> None:
    with FakeMcpHttpServer(version="2025-03-26") as web:
        async with connected([McpServerConfig("srv", url=web.url)]) as servers:
            assert servers.problems == () and servers.tools
        later = [h["mcp-protocol-version"] for m, h in web.requests if m != "initialize"]
    assert later and set(later) == {"2025-03-26"}
