"""An over-long NDJSON line cannot exhaust `loopd acp`'s memory or its connection:
it is dropped as it streams in, answered with an error carrying the request's id,
and the next line is read as usual."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.acp.conftest import Home, raw_loopd

pytestmark = pytest.mark.e2e

LINE_MB = 200  # four times the 50 MiB line limit


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


async def test_a_200_mb_line_is_refused_in_bounded_memory_and_the_next_request_works(
    home: Home,
) -> None:
    async with raw_loopd(home) as agent:
        await agent.initialized()
        assert agent.proc.stdin is not None
        head = b'{"jsonrpc":"2.0","id":41,"method":"session/new","params":{"cwd":"'
        agent.proc.stdin.write(head)
        block = b"x" * (1 << 20)
        for _ in range(LINE_MB):
            agent.proc.stdin.write(block)
            await agent.proc.stdin.drain()
        agent.proc.stdin.write(b'","mcpServers":[]}}\n')
        refused, _ = await agent.until_response(41)
        assert refused["error"]["code"] == -32600
        assert "limit" in refused["error"]["message"]
        await agent.send_line("{not json")
        alive, before = await agent.request("session/list", {})
        assert alive["result"] == {"sessions": []}
        assert [m["error"]["code"] for m in before] == [-32700]
        peak = peak_rss_mb(agent.proc.pid)
        assert peak < LINE_MB, f"peak RSS {peak:.0f} MB: the line was held whole"
    for line in agent.lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
