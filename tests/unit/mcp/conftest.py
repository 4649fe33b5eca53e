"""MCP servers for the client tests: the shipped fake, over stdio (a real child
process) or HTTP (a real server on loopback)."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from loopd.engine.ports import Clock
from loopd.mcp import McpServers, McpTimeouts
from loopd.mcp.config import McpServerConfig
from loopd.testing import fake_mcp
from loopd.testing.fake_mcp import FakeMcpHttpServer
from loopd.tools.env import SystemClock

FAKE_MCP = str(Path(fake_mcp.__file__).resolve())
BUILTIN = ("read", "write", "edit", "bash", "glob", "grep", "plan")


def stdio(name: str = "fake", *flags: str, env: Mapping[str, str] | None = None) -> McpServerConfig:
    return McpServerConfig(name, command=sys.executable, args=(FAKE_MCP, *flags), env=env or {})


def served(transport: str, web: FakeMcpHttpServer, *flags: str) -> McpServerConfig:
    """Server `srv`: the fake as a child (`stdio`, with `flags`) or `web` (`http`)."""
    return stdio("srv", *flags) if transport == "stdio" else McpServerConfig("srv", url=web.url)


class HeldClock:
    """Every sleep waits until the test expires it; `expire` ends only the sleeps
    already waiting, so a timeout passes exactly when a test says so."""

    def __init__(self) -> None:
        self.waiting: list[asyncio.Future[None]] = []
        self._slept = asyncio.Event()

    def monotonic(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        done = asyncio.get_running_loop().create_future()
        self.waiting.append(done)
        self._slept.set()
        try:
            await done
        finally:
            self.waiting.remove(done)

    async def expire_next(self) -> None:
        """Once a sleep is waiting, end every waiting sleep."""
        self._slept.clear()
        if not self.waiting:
            await self._slept.wait()
        for done in self.waiting:
            done.set_result(None)


@asynccontextmanager
async def connected(
    configs: Sequence[McpServerConfig],
    clock: Clock | None = None,
    base_env: Mapping[str, str] | None = None,
    reserved: Sequence[str] = BUILTIN,
) -> AsyncIterator[McpServers]:
    # An empty folder of its own, never one that holds the checkout: an executable
    # inside the workspace (the .venv's python) is refused, wherever the clone is.
    with tempfile.TemporaryDirectory(prefix="mcp-cwd-") as cwd:
        servers = await McpServers.connect(
            configs,
            reserved=reserved,
            cwd=cwd,
            base_env=base_env if base_env is not None else {"PATH": os.environ["PATH"]},
            clock=clock or SystemClock(),
            timeouts=McpTimeouts(startup=20, call=20, close=0.05),
        )
        try:
            yield servers
        finally:
            await servers.aclose()
