"""Serving ACP: `serve_stdio` for `loopd acp`, `serve` for any pair of byte streams.

stdout is the protocol channel and nothing else may reach it. `serve_stdio` first
duplicates descriptor 1 for the protocol writer and then points descriptor 1 at
stderr, so a stray `print` in any library lands in the editor's log instead of
corrupting a JSON line. The stdin reader, its protocol and transport are held for
the life of the connection: asyncio holds them only weakly, and a collected reader
looks to the SDK like the editor hung up. stdin and stdout may be pipes, terminals,
regular files or `/dev/null` (see `loopd.streams.stdio`).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import IO, Any, BinaryIO, cast

from acp.agent.connection import AgentSideConnection
from acp.connection import Connection, StreamDirection, StreamEvent, StreamObserver
from acp.interfaces import Agent
from acp.router import MessageRouter

from loopd.acp.agent import LoopdAgent
from loopd.acp.handshake import Handshake, Handshaking
from loopd.acp.models import ModelRoutes
from loopd.acp.transport import BoundedNdjson
from loopd.sessions.starting import Starting
from loopd.streams.read_ahead import take_read_ahead
from loopd.streams.stdio import hung_up, open_stdin, open_stdout, protect_stdout
from loopd.tasks import first_to_end

log = logging.getLogger(__name__)

STDIN_LIMIT = 50 * 1024 * 1024  # base64 images arrive on one line; longer lines are refused


class _Routes(Agent, ModelRoutes):
    """What loopd answers: the SDK's agent methods (the unstable ones too, so
    `session/fork` is served and the SDK has nothing to warn about), plus the
    legacy `session/set_model`."""


class _Connection(Connection):
    """The SDK's connection, whose observers are shown requests and answers only:
    ours read nothing else, and the SDK deep-copies every message it shows them
    (each update of a 10,000-message replay, for nothing)."""

    def _notify_observers(self, direction: StreamDirection, message: dict[str, Any]) -> None:
        if "id" in message:
            super()._notify_observers(direction, message)


async def serve(
    agent: LoopdAgent,
    writer: asyncio.StreamWriter,
    reader: asyncio.StreamReader,
    requests: InFlight | None = None,
    pace: Callable[[], Awaitable[None]] | None = None,
    handshake: Handshake | None = None,
) -> None:
    """Serve one ACP connection until the peer closes it. On the way out, whatever
    the connection was running is cancelled and sessions only it had are closed.
    `pace`, when given, is awaited before each message is read. With `requests`, the
    end of the input first waits for what it asked (see `_answer_what_arrived`).
    `handshake`: what the forwarder read and answered first (`loopd.acp.handshake`)."""
    router = MessageRouter.from_protocol(_Routes, agent, use_unstable_protocol=True)

    async def at_end() -> None:
        if requests is not None:
            await _answer_what_arrived(agent, conn, requests, writer)

    start = handshake or Handshake()
    lines = BoundedNdjson(
        reader, writer, STDIN_LIMIT, pace=pace, at_end=at_end, pending=start.pending
    )
    transport = Handshaking(lines, start)
    watchers: list[StreamObserver] = [agent.observe]
    if requests is not None:
        watchers.append(requests.observe)
    conn = _Connection(router, transport, listening=False, observers=watchers)
    AgentSideConnection.attach(agent, conn, use_unstable_protocol=True)  # the client side
    try:
        await conn.main_loop()
    finally:
        manager = agent.started
        if agent.link is not None and manager is not None:
            await manager.detach(agent.link)
        await asyncio.shield(conn.close())


async def _answer_what_arrived(
    agent: LoopdAgent, conn: Connection, requests: InFlight, writer: asyncio.StreamWriter
) -> None:
    """The input ended: answer the requests that came before its end (a client may
    write them and close at once, `printf '…' | loopd acp`), unless nobody reads the
    answers any more. A running prompt is cancelled (nobody will see it through) and
    so answers `cancelled`. The client can answer nothing now: its questions are refused,
    those already asked too (the SDK's own disconnect would reject them only once
    the connection closes, cancelling the requests it still owes)."""
    if agent.link is not None:
        agent.link.answers = False
    conn._reject_all_outgoing(ConnectionError("the client closed its input"))
    manager = agent.started
    if agent.link is not None and manager is not None:
        await manager.cancel_turns(agent.link)  # a running prompt answers `cancelled`
    await first_to_end(requests.settled(), hung_up(writer))


async def serve_stdio(manager: Starting, out: IO[bytes] | None = None) -> None:
    """`loopd acp`: one ACP connection on this process's stdin and stdout. `manager`
    may still be starting (see `LoopdAgent`). `out` is the handle `protect_stdout`
    returned, for callers that protect stdout before building the manager
    (recommended: nothing may print first)."""
    out = out if out is not None else protect_stdout()
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    here = Handshake(take_read_ahead())  # what the forwarder read and answered, if it did
    await serve_streams(manager, 0, cast(BinaryIO, out), here)


async def serve_streams(
    manager: Starting, stdin_fd: int, out: BinaryIO, handshake: Handshake | None = None
) -> None:
    """One ACP connection on an editor's stdin (descriptor `stdin_fd`) and stdout
    (`out`): this process's own, or an editor's handed to the daemon.

    stdin may be a regular file of requests (`loopd acp < requests.jsonl`): they are
    served in order, each answered before the next is read, and all before the end
    of the file closes the connection. Such a client cannot answer requests of ours:
    approvals are refused unasked."""
    stdin = await open_stdin(STDIN_LIMIT, stdin_fd)
    writer = await open_stdout(out)
    requests = InFlight()
    pace = requests.settled if stdin.batch else None  # one request at a time, in order
    try:
        # mypy sees the SDK's unstable routes as abstract; `errors.refuse_unimplemented`
        # fills them in when the module loads.
        agent = LoopdAgent(manager, client_answers=not stdin.batch)  # type: ignore[abstract]
        await serve(agent, writer, stdin.reader, requests=requests, pace=pace, handshake=handshake)
        sys.stderr.write("loopd acp: stdin closed, exiting\n")
    finally:
        writer.close()
        stdin.close()


class InFlight:
    """Connection observer counting the client's requests not yet answered."""

    def __init__(self) -> None:
        self._open: set[Any] = set()
        self._changed = asyncio.Event()

    def observe(self, event: StreamEvent) -> None:
        message = event.message
        if "id" not in message:
            return
        if event.direction is StreamDirection.INCOMING and "method" in message:
            self._open.add(message["id"])
        elif event.direction is StreamDirection.OUTGOING and "method" not in message:
            self._open.discard(message["id"])
        self._changed.set()

    async def settled(self) -> None:
        """Returns once every request seen so far has its answer on the wire."""
        while self._open:
            self._changed.clear()
            await self._changed.wait()
