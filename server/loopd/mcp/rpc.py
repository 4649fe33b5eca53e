"""JSON-RPC 2.0 between loopd and one MCP server, over any transport.

`RpcPeer` owns what both transports share: request ids, the futures waiting for
answers, a timeout on every request (measured on the injected `Clock`, so tests
decide when it passes), the few requests a server may send us, and failing every
waiting request at once when the connection ends. A transport only moves messages:
`send` writes one, and everything that arrives is handed to `RpcPeer.receive`
(a stdio reader loop does it as lines come; the HTTP transport while it reads the
reply to its POST).

Errors, all `McpError`:

    McpError              the server broke the protocol, or answered with an error
    ├── McpTimeout        no answer in time
    └── McpClosed         the connection is gone (process exited, stream closed)
        └── McpExpired    an HTTP server no longer knows our session (404)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from loopd.engine.ports import Clock

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
T = TypeVar("T")
SEND_TIMEOUT = 10.0  # seconds for a message that expects no answer


class McpError(Exception):
    """`code` is the JSON-RPC error code when the server answered with an error."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class McpTimeout(McpError):
    pass


class McpClosed(McpError):
    pass


class McpExpired(McpClosed):
    """The request was not handled: the client may initialise again and retry."""


class Transport(Protocol):
    async def send(self, message: Mapping[str, Any]) -> None:
        """Write one message. Raise `McpError` when it cannot be delivered."""
        ...

    def negotiated(self, version: str) -> None:
        """The protocol revision `initialize` settled on."""
        ...

    async def aclose(self) -> None: ...


async def within(clock: Clock, seconds: float, work: Awaitable[T], what: str) -> T:
    """`work`'s result, or `McpTimeout` once `seconds` pass on `clock`; `work` is then
    cancelled and awaited, so whatever it started is cleaned up when this returns."""
    task = asyncio.ensure_future(work)
    timer = asyncio.ensure_future(clock.sleep(seconds))
    try:
        done, _ = await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        if not task.done():
            task.cancel()  # and wait for it: what it started is cleaned up by then
            await asyncio.gather(task, return_exceptions=True)
    if task in done:
        return task.result()
    raise McpTimeout(f"no answer to {what} within {seconds:g}s")


class RpcPeer:
    """Our side of the conversation. Bind a transport with `attach` before use.
    `on_notice` hears every notification's method; it must not block (it runs in
    the transport's reader), so what it does that waits is a task of its own."""

    def __init__(self, name: str, clock: Clock) -> None:
        self.name = name
        self.clock = clock
        self.on_notice: Callable[[str], None] = lambda method: None
        self._transport: Transport | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[JsonObject]] = {}
        self._closed: McpClosed | None = None

    def attach(self, transport: Transport) -> None:
        self._transport = transport

    async def request(self, method: str, params: Mapping[str, Any], seconds: float) -> JsonObject:
        """The `result` of one request, or `McpTimeout` after `seconds`. On timeout
        the server is told the request is cancelled (it may still be working on it)."""
        if self._closed is not None:
            raise self._closed
        rid = next(self._ids)
        answer: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = answer
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": dict(params)}
        try:
            return await within(self.clock, seconds, self._exchange(message, answer), method)
        except McpTimeout:
            await self._cancel_quietly(rid)
            raise
        finally:
            self._waiting.pop(rid, None)

    async def _exchange(
        self, message: JsonObject, answer: asyncio.Future[JsonObject]
    ) -> JsonObject:
        await self._transport_or_fail().send(message)
        return await answer

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification; `McpTimeout` if even that takes over `SEND_TIMEOUT`
        (a server that stops reading, an HTTP server that never replies)."""
        message: JsonObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._send(message, method)

    async def _send(self, message: JsonObject, what: str) -> None:
        await within(self.clock, SEND_TIMEOUT, self._transport_or_fail().send(message), what)

    async def _cancel_quietly(self, rid: int) -> None:
        with contextlib.suppress(McpError):
            await self.notify("notifications/cancelled", {"requestId": rid, "reason": "timeout"})

    def _transport_or_fail(self) -> Transport:
        if self._transport is None:
            raise McpClosed(f"{self.name}: not connected")
        return self._transport

    async def receive(self, message: Any) -> None:
        """One message from the server: an answer to us, a request, or a notice."""
        if not isinstance(message, dict):
            log.warning("mcp %s: ignoring a message that is not an object", self.name)
            return
        if "method" in message:
            await self._served(message)
            return
        rid = message.get("id")
        answer = self._waiting.get(rid) if isinstance(rid, int) else None
        if answer is None or answer.done():
            log.debug("mcp %s: answer to no waiting request: %s", self.name, message.get("id"))
            return
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            text = str(error.get("message", "error"))
            answer.set_exception(McpError(text, code if isinstance(code, int) else None))
        elif isinstance(message.get("result"), dict):
            answer.set_result(message["result"])
        else:
            answer.set_exception(McpError("the answer has neither a result object nor an error"))

    async def _served(self, message: JsonObject) -> None:
        """Requests a server may send us: `ping` is answered; everything else (we
        declared no client capabilities) is refused. Notifications go to `on_notice`."""
        method = message["method"]
        if "id" not in message:
            log.debug("mcp %s: notification %s", self.name, method)
            self.on_notice(str(method))
            return
        reply: JsonObject = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "ping":
            reply["result"] = {}
        else:
            reply["error"] = {"code": -32601, "message": f"loopd does not offer {method}"}
        try:
            await self._send(reply, f"the answer to {method}")
        except McpError as err:
            log.debug("mcp %s: could not answer %s: %s", self.name, method, err)

    def close(self, reason: str) -> None:
        """The connection ended: every waiting request fails with `reason`."""
        if self._closed is None:
            self._closed = McpClosed(reason)
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(self._closed)
