"""The remote connections `loopd serve` holds: each a daemon connection (see
`loopd.remote.upstream`) with its streams, kept through a dropped network.

A connection begins with the client's `initialize` and lasts until the client
deletes it, the daemon ends it, or no client has looked at it (a stream open or a
message posted) for `grace` seconds. Until then a client that lost its network
finds it again by its `Acp-Connection-Id`, and its streams resume where they broke
(`loopd.remote.streams`): the daemon never noticed, so a turn runs on meanwhile.

A message the client posts again (its answer was lost with the network) is passed
on once: by its `Loopd-Message` number when the client numbers what it posts (as
both bridges do: an LSP editor's notifications, `didChange` above all, must not
apply twice), else requests and responses by their id, per connection.

A connection speaks ACP or LSP (`/acp` or `/lsp`). An LSP one has one stream, as a
WebSocket has: LSP has no sessions of its own to route by.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopd.remote.roots import acp_method, visible
from loopd.remote.routing import Routes, message_id_key
from loopd.remote.streams import Log
from loopd.remote.upstream import Speaks, Upstream

log = logging.getLogger(__name__)

INITIALIZE_TIMEOUT = 60.0  # seconds for the daemon's `initialize` answer (it may be starting)
REMEMBERED = 4096  # message ids remembered per connection, to pass a repeat on once


@dataclass(frozen=True, slots=True)
class Client:
    """Who a connection serves, as `loopd doctor` shows it."""

    peer: str
    since: float  # wall clock
    transport: str  # "http" | "websocket"
    speaks: Speaks = "acp"


@dataclass
class Remote:
    """One remote connection (see the module docstring)."""

    id: str
    client: Client
    upstream: Upstream
    single: bool  # a WebSocket or LSP: every message on one stream, in order
    routes: Routes = field(default_factory=Routes)
    main: Log = field(default_factory=Log)
    sessions: dict[str, Log] = field(default_factory=dict)
    reply: asyncio.Future[dict[str, Any]] | None = None  # `initialize`'s, for the POST
    looked: float = field(default_factory=time.monotonic)
    watching: int = 0  # streams open now
    touched: Callable[[], None] = lambda: None  # its sessions changed (`loopd doctor`)
    roots: tuple[str, ...] = ()  # what its session lists may show

    @property
    def speaks(self) -> Speaks:
        return self.client.speaks

    _listing: set[str] = field(default_factory=set)  # its `session/list` requests
    _seen: OrderedDict[str, None] = field(default_factory=OrderedDict)
    _numbered: int = 0  # the highest `Loopd-Message` number passed on
    _initialize: str | None = None

    async def deliver(self, message: dict[str, Any], number: int | None = None) -> None:
        """Pass a client's message to the daemon (once, however often it is posted)."""
        self.looked = time.monotonic()
        key = message_id_key(message.get("id"))
        if number is not None:
            if number <= self._numbered:
                return
            self._numbered = number
        elif key is not None:
            seen = f"{'request' if 'method' in message else 'response'}:{key}"
            if seen in self._seen:
                return
            self._seen[seen] = None
            if len(self._seen) > REMEMBERED:
                self._seen.popitem(last=False)
        if acp_method(message.get("method")) == "session/list" and key is not None:
            self._listing.add(key)
        known = len(self.routes.sessions)
        self.routes.inbound(message)
        if len(self.routes.sessions) != known:
            self.touched()
        await self.upstream.send(message)

    def stream(self, session: str | None) -> Log | None:
        """The log of the connection's stream (`session` None) or a session's; None
        for a session this connection has not opened."""
        if session is None or self.single:
            return self.main
        if session not in self.routes.sessions:
            return None
        return self.sessions.setdefault(session, Log())

    async def pump(self, ended: Callable[[Remote], None]) -> None:
        """Route the daemon's messages to the streams until it ends the connection."""
        try:
            while (message := await self.upstream.receive()) is not None:
                if self._answers_initialize(message):
                    continue
                key = message_id_key(message.get("id"))
                if "method" not in message and key in self._listing:
                    self._listing.discard(key or "")
                    message = visible(message, self.roots)
                known = len(self.routes.sessions)
                session = self.routes.outbound(message)
                if len(self.routes.sessions) != known:
                    self.touched()
                target = self.stream(None if self.single else session)
                (target or self.main).push(message)
        finally:
            self.main.close()
            for stream in self.sessions.values():
                stream.close()
            ended(self)

    def expect_initialize(self, message: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        self._initialize = message_id_key(message.get("id"))
        self.reply = asyncio.get_running_loop().create_future()
        return self.reply

    def _answers_initialize(self, message: dict[str, Any]) -> bool:
        if self.reply is None or self.reply.done() or "method" in message:
            return False
        if message_id_key(message.get("id")) != self._initialize:
            return False
        self.reply.set_result(message)
        return self.client.transport != "websocket"  # which reads it on its one stream


class Connections:
    """Every remote connection of this `loopd serve`, by id."""

    def __init__(self, env: Mapping[str, str], roots: tuple[str, ...], grace: float) -> None:
        self._env, self._roots, self.grace = env, roots, grace
        self.live: dict[str, Remote] = {}
        self._pumps: set[asyncio.Task[None]] = set()
        self.changed: Callable[[], None] = lambda: None

    async def open(self, client: Client) -> Remote:
        """A new connection of the daemon's (`Unreachable` when it cannot be had)."""
        single = client.transport == "websocket" or client.speaks == "lsp"
        cid = secrets.token_hex(16)
        tag = f"connection {cid[:8]}"
        upstream = await Upstream.open(self._env, self._roots[0], tag, client.speaks)
        remote = Remote(
            cid, client, upstream, single, touched=lambda: self.changed(), roots=self._roots
        )
        self.live[cid] = remote
        pump = asyncio.create_task(remote.pump(self._ended))
        self._pumps.add(pump)
        pump.add_done_callback(self._pumps.discard)
        log.info(
            "connection %s from %s (%s, %s)", cid[:8], client.peer, client.speaks, client.transport
        )
        self.changed()
        return remote

    async def close(self, remote: Remote) -> None:
        if self.live.pop(remote.id, None) is not None:
            log.info("connection %s from %s closed", remote.id[:8], remote.client.peer)
            self.changed()
        await remote.upstream.close()

    def _ended(self, remote: Remote) -> None:
        if self.live.pop(remote.id, None) is not None:
            log.info("the daemon ended connection %s", remote.id[:8])
            self.changed()

    async def reap(self) -> None:
        """Close the connections no client has looked at within `grace` seconds."""
        while True:
            await asyncio.sleep(min(self.grace, 5.0))
            now = time.monotonic()
            for remote in list(self.live.values()):
                if remote.watching == 0 and now - remote.looked >= self.grace:
                    await self.close(remote)

    async def aclose(self) -> None:
        for remote in list(self.live.values()):
            await self.close(remote)
        for pump in list(self._pumps):
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump
