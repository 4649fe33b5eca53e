"""Serving ACP: `serve_stdio` for `loopd acp`, `serve` for any pair of byte streams.

stdout is the protocol channel and nothing else may reach it. `serve_stdio` first
duplicates descriptor 1 for the protocol writer and then points descriptor 1 at
stderr, so a stray `print` in any library lands in the editor's log instead of
corrupting a JSON line. The stdin reader, its protocol and both transports are held
by `_Stdio` for the life of the connection: asyncio holds them only weakly, and a
collected reader looks to the SDK like the editor hung up.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass
from typing import IO, Any

from acp.agent.connection import AgentSideConnection
from acp.connection import Connection
from acp.interfaces import Agent
from acp.router import MessageRouter

from loopd.acp.agent import LoopdAgent
from loopd.acp.models import ModelRoutes
from loopd.acp.transport import BoundedNdjson
from loopd.sessions.manager import SessionManager
from loopd.stdio import protect_stdout

log = logging.getLogger(__name__)

STDIN_LIMIT = 50 * 1024 * 1024  # base64 images arrive on one line; longer lines are refused


class _Routes(Agent, ModelRoutes):
    """What loopd answers: the SDK's agent methods (the unstable ones too, so
    `session/fork` is served and the SDK has nothing to warn about), plus the
    legacy `session/set_model`."""


async def serve(
    agent: LoopdAgent, writer: asyncio.StreamWriter, reader: asyncio.StreamReader
) -> None:
    """Serve one ACP connection until the peer closes it. On the way out, whatever
    the connection was running is cancelled and sessions only it had are closed."""
    router = MessageRouter.from_protocol(_Routes, agent, use_unstable_protocol=True)
    transport = BoundedNdjson(reader, writer, STDIN_LIMIT)
    conn = Connection(router, transport, listening=False, observers=[agent.observe])
    AgentSideConnection.attach(agent, conn, use_unstable_protocol=True)  # the client side
    try:
        await conn.main_loop()
    finally:
        manager = agent.started
        if agent.link is not None and manager is not None:
            await manager.detach(agent.link)
        await asyncio.shield(conn.close())


async def serve_stdio(
    manager: SessionManager | asyncio.Future[SessionManager], out: IO[bytes] | None = None
) -> None:
    """`loopd acp`: one ACP connection on this process's stdin and stdout. `manager`
    may still be starting (see `LoopdAgent`). `out` is the handle `protect_stdout`
    returned, for callers that protect stdout before building the manager
    (recommended: nothing may print first)."""
    out = out if out is not None else protect_stdout()
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    stdio = await _Stdio.open(out)
    try:
        # mypy sees the SDK's unstable routes as abstract; `agent._refuse_the_rest`
        # fills them in when the module loads.
        agent = LoopdAgent(manager)  # type: ignore[abstract]
        await serve(agent, stdio.writer, stdio.reader)
    finally:
        stdio.close()


@dataclass(slots=True)
class _Stdio:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    keep: tuple[Any, ...]  # strong references asyncio does not keep itself

    @classmethod
    async def open(cls, out: IO[bytes]) -> _Stdio:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=STDIN_LIMIT)
        reader_protocol = asyncio.StreamReaderProtocol(reader)
        read_transport, _ = await loop.connect_read_pipe(lambda: reader_protocol, sys.stdin)
        write_transport, write_protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, out
        )
        writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
        return cls(reader, writer, (reader_protocol, read_transport, write_protocol, out))

    def close(self) -> None:
        self.writer.close()
        for item in self.keep:
            if isinstance(item, asyncio.BaseTransport):
                item.close()
