"""`loopd lsp`: one `LoopdServer` per editor connection, all on one SessionManager.

pygls serves one connection per server object, and everything per connection (the
client's capabilities and opt-ins, its link, its turns, its open documents) lives on
that object, never in module state. Over stdio there is one connection; over TCP
each accepted connection gets a fresh server, so several editors can share one
loopd (and its sessions) at once.

Handlers are async and thin: they parse, call the session layer, translate. Errors
the person can fix (bad params, an unknown session or option) answer -32602; other
loopd errors answer with their message; nothing a client sends takes the server down.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, BinaryIO, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from loopd import __version__
from loopd.lines import LineReader
from loopd.lsp.framing import MARKER, MAX_HEADER_LINE, serve_frames
from loopd.lsp.link import (
    ASK_USER_METHOD,
    PERMISSION_METHOD,
    UPDATE_METHOD,
    ClientOptions,
    LspLink,
)
from loopd.lsp.review import PROPOSE_METHOD, SETTLED_METHOD
from loopd.lsp.turns import Turns
from loopd.lsp.wire import BadParams, raw_converter
from loopd.protocol.errors import ConfigError, LoopdError
from loopd.runtimes.base import McpServerConfig
from loopd.sessions.manager import SessionBusy, SessionManager, SessionNotFound, SessionView
from loopd.sessions.queue import NotRunning
from loopd.sessions.starting import StartFailed, Starting, started, wait_started
from loopd.stdio import open_stdin, open_stdout, protect_stdout

log = logging.getLogger(__name__)

SESSION_REQUESTS = (
    "new",
    "load",
    "list",
    "prompt",
    "continue",
    "close",
    "delete",
    "setConfigOption",
    "steer",
    "mentions",
    "checkpoints",
    "restore",
)
R = TypeVar("R")


class LoopdProtocol(LanguageServerProtocol):
    """Adds what pygls has no knob for: the server's `experimental.loopd` answer, and
    an `exit` that ends this connection instead of the whole process."""

    _server: LoopdServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {
            "loopd": {
                "version": 1,
                "requests": [f"loopd/session/{m}" for m in SESSION_REQUESTS],
                "notifications": ["loopd/session/cancel"],
                "sessionUpdate": UPDATE_METHOD,
                "requestPermission": PERMISSION_METHOD,
                "askUser": ASK_USER_METHOD,
                "review": {"propose": PROPOSE_METHOD, "settled": SETTLED_METHOD},
            }
        }
        return result

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        self._server.hang_up()
        yield from ()


class LoopdServer(LanguageServer):
    """One editor connection: its options, link, turns, documents and sessions."""

    def __init__(self, manager: Starting) -> None:
        super().__init__(
            "loopd",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=LoopdProtocol,
            converter_factory=raw_converter,
        )
        self._manager = manager
        self.link = LspLink(self, ClientOptions())
        self.turns = Turns(self, self.link)
        self.link.on_step = self.turns.on_step
        self.current: str | None = None  # the session commands act on by default
        self.opened: list[str] = []
        self.hang_up: Callable[[], None] = lambda: None

    # -- sessions of this connection -------------------------------------------------

    @property
    def manager(self) -> SessionManager:
        """The session manager. Only for handlers that ran `ready()` first (`rpc`
        does): while loopd is starting there is none."""
        manager = started(self._manager)
        if manager is None:
            raise StartFailed("loopd is still starting")
        return manager

    async def ready(self) -> SessionManager:
        """Wait until the manager is built; `StartFailed` says why it never will be."""
        return await wait_started(self._manager)

    def root(self) -> str:
        try:
            root = self.workspace.root_path
        except RuntimeError:
            root = None
        return root or os.getcwd()

    async def open_new(
        self,
        cwd: str,
        additional_dirs: Sequence[str] = (),
        mcp: Sequence[McpServerConfig] = (),
    ) -> SessionView:
        view = await self.manager.new_session(cwd, self.link, additional_dirs, mcp)
        self._attach(view.id)
        return view

    async def load(self, session_id: str, mcp: Sequence[McpServerConfig] = ()) -> SessionView:
        view = await self.manager.load_session(session_id, self.link, mcp)
        self._attach(session_id)
        return view

    async def close(self, session_id: str) -> None:
        await self.manager.close_session(session_id, self.link)
        self._detach(session_id)

    async def session_for(self, session_id: str | None) -> str:
        """The session a command acts on: the one named (it must be open here), else
        the current one, else a new one in the workspace root."""
        if session_id is not None:
            return self.require_open(session_id)
        if self.current is None:
            await self.open_new(self.root())
        assert self.current is not None
        return self.current

    def require_open(self, session_id: str) -> str:
        if session_id not in self.opened:
            raise BadParams(f"session {session_id!r} is not open on this connection; load it")
        return session_id

    def _attach(self, session_id: str) -> None:
        if session_id not in self.opened:
            self.opened.append(session_id)
        self.current = session_id

    def _detach(self, session_id: str) -> None:
        if session_id in self.opened:
            self.opened.remove(session_id)
        if self.current == session_id:
            self.current = self.opened[-1] if self.opened else None

    async def disconnect(self) -> None:
        """The connection ended: cancel its turns, let go of its sessions."""
        await self.turns.close()
        manager = started(self._manager)
        if manager is not None:  # no session can be open before it exists
            await manager.detach(self.link)
        for session_id in list(self.opened):
            self._detach(session_id)


def rpc(
    handler: Callable[[LoopdServer, Any], Awaitable[R]],
) -> Callable[[LoopdServer, Any], Awaitable[R]]:
    """Map loopd's errors to JSON-RPC errors at the edge, in one place; and wait,
    in arrival order, for a manager still starting."""

    @functools.wraps(handler)
    async def wrapped(ls: LoopdServer, params: Any) -> R:
        try:
            await ls.ready()
            return await handler(ls, params)
        except (BadParams, SessionNotFound, ConfigError) as e:
            raise JsonRpcInvalidParams(str(e)) from e
        except (SessionBusy, NotRunning) as e:  # refused now, not failed: try otherwise
            raise JsonRpcInvalidRequest(str(e)) from e
        except LoopdError as e:
            raise JsonRpcInternalError(str(e)) from e

    return wrapped


def build_server(manager: Starting) -> LoopdServer:
    """A server for one connection, with every feature registered."""
    from loopd.lsp import commands, extension

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
    `out` is the protocol's stdout from `loopd.stdio.protect_stdout`, for callers
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
        await _serve_connection(manager, stdin.reader, writer)
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
) -> None:
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
    finally:
        await server.disconnect()
