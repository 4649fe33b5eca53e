"""Spawning the ACP agent (`scripted_agent.py`: the production stdio server over a
scripted model) and talking raw NDJSON to it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
AGENT = [sys.executable, str(Path(__file__).with_name("scripted_agent.py"))]

pytestmark = pytest.mark.e2e


def agent_env(home: Path, script: dict[str, Any]) -> dict[str, str]:
    return {
        **os.environ,
        "LOOPD_HOME": str(home),
        "LOOPD_TEST_SCRIPT": json.dumps(script),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT)]),
    }


@dataclass
class RawAgent:
    """The agent as a subprocess; every stdout line is kept (and must be JSON)."""

    proc: asyncio.subprocess.Process
    lines: list[str] = field(default_factory=list)
    next_id: int = 0

    async def send_line(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_line(json.dumps({"jsonrpc": "2.0", **message}))

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 10)
        assert line, "the agent closed stdout"
        text = line.decode()
        self.lines.append(text)
        message: dict[str, Any] = json.loads(text)
        return message

    async def request(
        self, method: str, params: Any, answer: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Send a request; return its response and the messages before it. Agent
        requests met on the way are answered with `answer` (a permission result)."""
        self.next_id += 1
        rid = self.next_id
        await self.send({"id": rid, "method": method, "params": params})
        return await self.until_response(rid, answer)

    async def until_response(
        self, rid: int, answer: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        seen: list[dict[str, Any]] = []
        while True:
            message = await self.recv()
            if message.get("id") == rid and "method" not in message:
                return message, seen
            seen.append(message)
            if "method" in message and "id" in message and answer is not None:
                await self.send({"id": message["id"], "result": answer})


@asynccontextmanager
async def raw_agent(home: Path, script: dict[str, Any]) -> AsyncIterator[RawAgent]:
    proc = await asyncio.create_subprocess_exec(
        *AGENT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=agent_env(home, script),
    )
    agent = RawAgent(proc)
    try:
        yield agent
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def initialized(agent: RawAgent) -> None:
    response, _ = await agent.request("initialize", {"protocolVersion": 1})
    assert response["result"]["protocolVersion"] == 1
