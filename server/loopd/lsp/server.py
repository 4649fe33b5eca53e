"""`loopd lsp`: one `LoopdServer` (`loopd.lsp.base`) per editor connection, all on
one SessionManager, with every handler registered.

Over stdio there is one connection; over TCP each accepted connection gets a fresh
server, so several editors can share one loopd (and its sessions) at once.

Handlers are async and thin: they parse, call the session layer, translate. Errors
the person can fix (bad params, an unknown session or option) answer -32602; other
loopd errors answer with their message; nothing a client sends takes the server down.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

from lsprotocol import types

from loopd.lsp import commands, extension
from loopd.lsp.base import LoopdServer
from loopd.lsp.framing import MARKER, MAX_HEADER_LINE, serve_frames
from loopd.lsp.link import (
    ClientOptions,
)
from loopd.sessions.manager import SessionManager
from loopd.sessions.starting import Starting
from loopd.streams.lines import LineReader
from loopd.streams.stdio import hung_up, open_stdin, open_stdout, protect_stdout

log = logging.getLogger(__name__)


def build_server(manager: Starting) -> LoopdServer:
    """A server for one connection, with every feature registered."""
    server = LoopdServer(manager)

    @server.feature(types.INITIALIZE)
    def negotiate(ls: LoopdServer, params: types.InitializeParams) -> None:
        ls.link.options = ClientOptions.negotiate(params)

    extension.register(server)
    commands.register(server)
    return server


async def serve(
    manager: Starting, tcp: tuple[str, int] | None = None, out: BinaryIO | None = None
) -> None:
    """Serve LSP on stdio (one connection) or on TCP (any number, until cancelled).
    `manager` may still be starting: `initialize` is answered at once, and requests
    that need sessions wait for it (see `loopd.sessions.starting`).
    `out` is the protocol's stdout from `loopd.streams.stdio.protect_stdout`, for callers
    that protect it before building the manager (recommended: nothing may print)."""
    if tcp is None:
        await serve_streams(manager, 0, out if out is not None else protect_stdout())
        return

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await _serve_connection(manager, reader, writer)
        finally:
            writer.close()

    listener = await asyncio.start_server(accept, *tcp)
    host, port = listener.sockets[0].getsockname()[:2]
    sys.stderr.write(f"loopd lsp: listening on {host}:{port}\n")
    sys.stderr.flush()
    async with listener:
        await listener.serve_forever()


async def serve_streams(manager: Starting, stdin_fd: int, out: BinaryIO) -> None:
    """One LSP connection on an editor's stdin (descriptor `stdin_fd`) and stdout
    (`out`): this process's own, or an editor's handed to the daemon. Writes go
    through the event loop, so an editor slow to read stalls only itself."""
    stdin = await open_stdin(1 << 20, stdin_fd)
    writer = await open_stdout(out)
    try:
        await _serve_connection(manager, stdin.reader, writer, lambda: hung_up(writer))
        sys.stderr.write("loopd lsp: stdin closed, exiting\n")
    finally:
        writer.close()
        stdin.close()


async def rehearse(times: int = 2) -> bytes:
    """Answer `initialize` in memory, `times` over, on a manager that never starts:
    the converter builds its hooks for the handshake's types and pygls its handler
    tables (some 40 ms, most of it the first time), which the daemon pays once, when
    it loads this stack, instead of the next editors' `initialize`."""
    params: dict[str, Any] = {"processId": None, "rootUri": None, "capabilities": {}}
    request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    body = json.dumps(request).encode()
    answered = _Answered(asyncio.StreamReader())
    for _ in range(times):
        answered = _Answered(asyncio.StreamReader())
        answered.reader.feed_data(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        never: asyncio.Future[SessionManager] = asyncio.get_running_loop().create_future()
        await _serve_connection(never, answered.reader, answered)
    return answered.answer


class _Answered:
    """The rehearsal's writer: the first answer ends the connection."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self.answer = b""

    def write(self, data: bytes) -> None:
        self.answer = data
        self.reader.feed_eof()

    def close(self) -> None:
        return None


async def _serve_connection(
    manager: Starting,
    reader: asyncio.StreamReader,
    writer: Any,
    gone: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Serve one connection until its input ends (then answer what it asked before,
    unless `gone`: nobody reads), `exit`, or a hang-up."""
    server = build_server(manager)
    server.protocol.set_writer(writer)
    stop = threading.Event()

    def hang_up() -> None:
        stop.set()
        reader.feed_eof()

    server.hang_up = hang_up
    try:
        lines = LineReader(reader, MAX_HEADER_LINE, resync=MARKER)
        await serve_frames(stop, lines, server.protocol)
        if not stop.is_set():  # the input ended (not `exit`, not a hang-up of ours)
            await server.input_ended(gone)
    finally:
        await server.disconnect()
