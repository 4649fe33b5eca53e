"""`LoopdServer`: what every LSP handler of one editor connection shares.

pygls serves one connection per server object, and everything per connection (the
client's capabilities and opt-ins, its link, its turns, its open documents, the
sessions it opened) lives on that object, never in module state. The handlers are
split by concern (`commands`: what every client gets; `extension`: the `loopd/*`
requests) and take this object; `rpc` maps loopd's errors at their edge. They are
joined in `loopd.lsp.server.build_server`, which is the only module that imports them,
so nothing here climbs back to the handlers.

The manager may still be starting (a future): `initialize` is answered at once, and
every handler that needs sessions waits for it (`rpc` does).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from loopd import __version__
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
from loopd.mcp.config import McpServerConfig
from loopd.protocol.errors import ConfigError, LoopdError
from loopd.sessions.manager import SessionBusy, SessionManager, SessionNotFound, SessionView
from loopd.sessions.queue import NotRunning
from loopd.sessions.starting import StartFailed, Starting, started, wait_started
from loopd.tasks import first_to_end

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
    "fork",
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
        self.answering: set[asyncio.Task[Any]] = set()  # the requests being answered (`rpc`)

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

    async def open_fork(
        self,
        session_id: str,
        point: int | None,
        cwd: str,
        additional_dirs: Sequence[str] = (),
        mcp: Sequence[McpServerConfig] = (),
    ) -> SessionView:
        """A fork of `session_id` opened here: its history so far, or (`point`) the
        conversation as it was before that prompt."""
        manager, link = self.manager, self.link
        if point is None:
            view = await manager.fork_session(session_id, cwd, link, additional_dirs, mcp)
        else:
            view = await manager.fork_at(session_id, point, cwd, link, additional_dirs, mcp)
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

    async def input_ended(self, gone: Callable[[], Awaitable[None]] | None = None) -> None:
        """The client closed its input: answer what it asked before that (a client may
        write its requests and close at once, `printf '…' | loopd lsp`), unless
        nobody reads the answers any more (`gone` returns). Its turns are cancelled
        first (an editor closing mid-turn is not waited on; they answer cancelled),
        and what it was asked fails (it can answer nothing now)."""
        await asyncio.sleep(0)  # the requests dispatched last start (`rpc` counts them)
        self.link.input_ended()
        await self.turns.close()
        await first_to_end(self._answered(), *(() if gone is None else (gone(),)))

    async def _answered(self) -> None:
        while self.answering:
            await asyncio.wait(set(self.answering))

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
        task = asyncio.current_task()
        if task is not None:
            ls.answering.add(task)
        try:
            await ls.ready()
            return await handler(ls, params)
        except (BadParams, SessionNotFound, ConfigError) as e:
            raise JsonRpcInvalidParams(str(e)) from e
        except (SessionBusy, NotRunning) as e:  # refused now, not failed: try otherwise
            raise JsonRpcInvalidRequest(str(e)) from e
        except LoopdError as e:
            raise JsonRpcInternalError(str(e)) from e
        finally:
            if task is not None:
                ls.answering.discard(task)

    return wrapped
