"""Spawning the real `loopd acp` against the loopback fake model, and talking to it
raw (NDJSON) or through the Python SDK client.

`loopd_acp` is the Python SDK client on a spawned `loopd acp`, initialized.

The child gets a throwaway home: `LOOPD_HOME`, `XDG_CONFIG_HOME` and `HOME` point
into the test's tmp dir, so the person's config and CLIs never leak in (PATH stays,
for bwrap and friends); the only runtime is the native one, on Anthropic at the fake.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, Client, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation, TextContentBlock

from loopd.testing.fake_llm import FakeLLMServer
from tests.e2e.conftest import serving

ROOT = Path(__file__).resolve().parents[3]
LOOPD = [sys.executable, "-m", "loopd", "acp"]

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Home:
    """A workspace and a private home for one `loopd acp` (or several in a row)."""

    root: Path
    fake: FakeLLMServer

    @property
    def work(self) -> Path:
        return self.root / "work"

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "LOOPD_HOME": str(self.root / "data"),
            "ANTHROPIC_BASE_URL": self.fake.base_url,
            "ANTHROPIC_API_KEY": "x",
            "PYTHONPATH": str(ROOT / "server"),
            **serving(),
            **extra,
        }


@pytest.fixture
def home(tmp_path: Path) -> Any:
    with FakeLLMServer() as fake:
        root = tmp_path.resolve()
        (root / "work").mkdir()
        yield Home(root, fake)


@asynccontextmanager
async def loopd_acp(
    home: Home,
    client: Client,
    capabilities: ClientCapabilities | None = None,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[ClientSideConnection]:
    """`loopd acp` in `home` (`env` on top of `home.env()`), initialized."""
    child_env = home.env(**(env or {}))
    async with spawn_agent_process(client, *LOOPD, env=child_env, cwd=home.work) as (conn, _):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=capabilities or ClientCapabilities(),
            client_info=Implementation(name="py-e2e", version="0"),
        )
        assert init.protocol_version == 1
        yield conn


def text(value: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=value)]


@dataclass
class RawAgent:
    """`loopd acp` as a subprocess; every stdout line is kept (and must be JSON)."""

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
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
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

    async def until(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            message = await self.recv()
            if predicate(message):
                return message

    async def new_session(self, cwd: Path) -> str:
        await self.initialized()
        new, _ = await self.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        sid: str = new["result"]["sessionId"]
        return sid

    async def initialized(self) -> None:
        response, _ = await self.request("initialize", {"protocolVersion": 1})
        assert response["result"]["protocolVersion"] == 1


@asynccontextmanager
async def raw_loopd(
    home: Home, env: Mapping[str, str] | None = None, argv: Sequence[str] = LOOPD
) -> AsyncIterator[RawAgent]:
    """`loopd acp` (or `argv`) in `home`, with `home.env()` or exactly `env`."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=home.env() if env is None else dict(env),
        cwd=home.work,
        limit=16 << 20,  # a tool result's update can pass asyncio's 64 KiB default
    )
    agent = RawAgent(proc)
    try:
        yield agent
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


def update_of(message: dict[str, Any]) -> dict[str, Any]:
    """The update a `session/update` carries ({} for any other message)."""
    if message.get("method") != "session/update":
        return {}
    update: dict[str, Any] = message["params"]["update"]
    return update


def prompt_params(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
