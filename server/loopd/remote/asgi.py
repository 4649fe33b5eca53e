"""The `/acp` endpoint as a plain ASGI app (served by hypercorn, `loopd.remote.serve`).

- `POST /acp`: one client→agent message. `initialize` opens a connection and is
  answered in the body with its `Acp-Connection-Id`; anything else needs that header
  (and `Acp-Session-Id` for session-scoped methods) and is accepted with 202.
- `GET /acp` (Accept: text/event-stream): the connection's stream, or a session's
  with `Acp-Session-Id`; `Last-Event-ID` resumes it (`loopd.remote.streams`).
- `DELETE /acp`: the connection ends.
- A WebSocket on `/acp`: one connection, every message both ways as a text frame.
- `/lsp`: the same over HTTP for an LSP connection (`loopd lsp --remote`): its
  messages are LSP's JSON-RPC bodies, all on the connection's one stream.
- `Loopd-Message: N` on a POST numbers it: a number already passed on is a repeat.

Every request carries the bearer token or is refused (401) before anything else is
read; a message naming a path outside the roots is refused (403) before the daemon
sees it. Bodies are bounded, and so is JSON nesting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopd.protocol.errors import ConfigError
from loopd.protocol.jsonvalues import loads_bounded
from loopd.remote import token
from loopd.remote.connections import INITIALIZE_TIMEOUT, Client, Connections, Remote
from loopd.remote.roots import Folders, outside, stored_outside
from loopd.remote.routing import (
    CONNECTION_ID_HEADER,
    SESSION_ID_HEADER,
    SESSION_SCOPED_METHODS,
    session_id_from_params,
)
from loopd.remote.streams import Gone, sse
from loopd.remote.upstream import Speaks, Unreachable
from loopd.tasks import first_to_end

log = logging.getLogger(__name__)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

PATH = "/acp"
PATHS: dict[str, Speaks] = {PATH: "acp", "/lsp": "lsp"}
NUMBER_HEADER = "Loopd-Message"
MAX_BODY = 50 * 1024 * 1024  # as `loopd acp`'s longest line (base64 images)
POLICY = -32001  # the JSON-RPC error of a message the server's boundary refuses
INVALID_PARAMS = -32602


@dataclass
class Endpoint:
    """The ASGI app: `connections` over the daemon; `env` names the data dir whose
    token hash is read for every request (a rotated token applies at once, a removed
    one refuses everyone)."""

    connections: Connections
    env: Mapping[str, str]
    roots: Sequence[str]
    folders: Folders  # a stored session's folders, judged when it is opened

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            match scope["type"]:
                case "lifespan":
                    await _lifespan(receive, send)
                case "http":
                    await self._http(scope, receive, send)
                case "websocket":
                    await self._websocket(scope, receive, send)
        except OSError as err:  # an SSLError, a reset: the client left as it was answered
            log.debug("a client left mid-answer: %s", err)

    def _allowed(self, scope: Scope) -> bool:
        try:
            digest = token.stored(self.env)
        except ConfigError as err:
            log.warning("refusing every request: %s", err)
            return False
        return token.matches(token.bearer(_header(scope, "authorization")), digest)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] not in PATHS:
            await _json(send, 404, {"error": f"not found: the endpoints are {', '.join(PATHS)}"})
            return
        if not self._allowed(scope):
            await _json(send, 401, {"error": "a valid bearer token is required"})
            return
        match scope["method"]:
            case "POST":
                await self._post(scope, receive, send)
            case "GET":
                await self._get(scope, receive, send)
            case "DELETE":
                remote = self._remote(scope)
                if remote is None:
                    await _json(send, 404, {"error": "unknown connection"})
                    return
                await self.connections.close(remote)
                await _json(send, 202, {})
            case _:
                await _json(send, 405, {"error": "POST, GET or DELETE"})

    def _remote(self, scope: Scope) -> Remote | None:
        """The connection the request names, if it speaks what the path serves."""
        cid = _header(scope, CONNECTION_ID_HEADER)
        remote = self.connections.live.get(cid or "")
        return remote if remote is not None and remote.speaks == PATHS[scope["path"]] else None

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (_header(scope, "content-type") or "").startswith("application/json"):
            await _json(send, 415, {"error": "Content-Type must be application/json"})
            return
        body = await _body(receive)
        if body is None:
            await _json(send, 413, {"error": f"a message is at most {MAX_BODY} bytes"})
            return
        try:
            message = loads_bounded(body)
        except ValueError as err:
            await _json(send, 400, {"error": f"not JSON: {err}"})
            return
        if not isinstance(message, dict):
            await _json(send, 400, {"error": "one JSON-RPC message, an object"})
            return
        refusal = self._refusal(message)
        if refusal is not None:
            await _json(send, 403, refusal)
            return
        if _initializes(message):
            await self._initialize(scope, message, send)
            return
        remote = self._remote(scope)
        if remote is None:
            await _json(send, 404, {"error": "unknown connection: initialize again"})
            return
        session = _header(scope, SESSION_ID_HEADER)
        named = session_id_from_params(message.get("params"))
        if session is None and message.get("method") in SESSION_SCOPED_METHODS:
            if named is None and "id" in message:  # no session to name: its params are wrong
                wrong = _answer(message, INVALID_PARAMS, "`sessionId` names no session")
                await _json(send, 400, wrong)
                return
            await _json(send, 400, {"error": f"{SESSION_ID_HEADER} is required"})
            return
        if session is not None and "method" in message and session != named:
            await _json(send, 400, {"error": f"{SESSION_ID_HEADER} is not its session"})
            return
        number = _header(scope, NUMBER_HEADER) or ""
        try:
            await remote.deliver(message, int(number) if number.isdigit() else None)
        except (ConnectionError, RuntimeError):
            await _json(send, 404, {"error": "the connection ended"})
            return
        await _json(send, 202, {})

    def _refusal(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """A JSON-RPC error answering a message that names a path outside the roots."""
        path = outside(message, self.roots) or stored_outside(message, self.roots, self.folders)
        if path is None:
            return None
        log.warning("refused %s naming %r, outside the roots", message.get("method"), path)
        if not path.startswith("/"):  # nothing to judge: the params are wrong, as locally
            return _answer(message, INVALID_PARAMS, f"{path!r} is not an absolute path")
        roots = ", ".join(self.roots)
        return _answer(message, POLICY, f"{path!r} is outside what this server serves ({roots})")

    async def _initialize(self, scope: Scope, message: dict[str, Any], send: Send) -> None:
        speaks = PATHS[scope["path"]]
        try:
            remote = await self.connections.open(_client(scope, "http", speaks))
        except Unreachable as err:
            await _json(send, 503, {"error": str(err)})
            return
        reply = remote.expect_initialize(message)
        try:
            await remote.deliver(message)
            answer = await asyncio.wait_for(reply, INITIALIZE_TIMEOUT)
        except (TimeoutError, ConnectionError, RuntimeError):
            await self.connections.close(remote)
            await _json(send, 504, {"error": "the daemon did not answer initialize"})
            return
        await _json(send, 200, answer, {CONNECTION_ID_HEADER: remote.id})

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        accept = _header(scope, "accept") or ""
        if "text/event-stream" not in accept and "*/*" not in accept:
            await _json(send, 406, {"error": "Accept must include text/event-stream"})
            return
        remote = self._remote(scope)
        if remote is None:
            await _json(send, 404, {"error": "unknown connection: initialize again"})
            return
        stream = remote.stream(_header(scope, SESSION_ID_HEADER))
        if stream is None:
            await _json(send, 404, {"error": "unknown session on this connection"})
            return
        after = _last_event_id(scope)
        try:
            stream.check(after)
        except Gone as err:
            await _json(send, 410, {"error": str(err)})
            return
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        remote.watching += 1
        try:
            await _until_gone(receive, _stream_out(stream.follow(after), send))
        finally:
            remote.watching -= 1
            remote.looked = time.monotonic()

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        if scope["path"] != PATH or not self._allowed(scope):
            await send({"type": "websocket.close", "code": 1008})
            return
        try:
            remote = await self.connections.open(_client(scope, "websocket"))
        except Unreachable as err:
            await send({"type": "websocket.close", "code": 1011, "reason": str(err)[:120]})
            return
        await send({"type": "websocket.accept"})
        try:
            outgoing = asyncio.create_task(_frames_out(remote, send))
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self._frames_in(remote, receive, send)
            outgoing.cancel()
            await asyncio.gather(outgoing, return_exceptions=True)
        finally:
            await self.connections.close(remote)

    async def _frames_in(self, remote: Remote, receive: Receive, send: Send) -> None:
        while (event := await receive())["type"] == "websocket.receive":
            raw = event.get("text") or event.get("bytes") or b""
            try:
                message = loads_bounded(raw.encode() if isinstance(raw, str) else raw)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            refusal = self._refusal(message)
            if refusal is not None:
                await send({"type": "websocket.send", "text": json.dumps(refusal)})
                continue
            if _initializes(message):
                remote.expect_initialize(message)
            await remote.deliver(message)


async def _frames_out(remote: Remote, send: Send) -> None:
    async for event in remote.main.follow(0):
        if event is not None:
            await send({"type": "websocket.send", "text": event[1]})
    await send({"type": "websocket.close", "code": 1000})


async def _stream_out(events: Any, send: Send) -> None:
    async for event in events:
        await send({"type": "http.response.body", "body": sse(event), "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _until_gone(receive: Receive, work: Awaitable[None]) -> None:
    """Run `work` until it ends or the client disconnects."""

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    await first_to_end(work, disconnected())


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        event = await receive()
        if event["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif event["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _body(receive: Receive) -> bytes | None:
    """The request's body, or None once it passes `MAX_BODY` (not read further)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            return b""
        chunk = event.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not event.get("more_body"):
            return b"".join(chunks)


async def _json(send: Send, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    raw = json.dumps(body).encode()
    fields = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    fields += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": raw})


def _answer(message: dict[str, Any], code: int, text: str) -> dict[str, Any]:
    """A JSON-RPC error answering `message` (a bridge shows it to the editor as is)."""
    return {"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": code, "message": text}}


def _initializes(message: dict[str, Any]) -> bool:
    return message.get("method") == "initialize" and "id" in message


def _header(scope: Scope, name: str) -> str | None:
    wanted = name.lower().encode()
    for key, value in scope.get("headers", ()):
        if key == wanted:
            return bytes(value).decode("latin-1")
    return None


def _last_event_id(scope: Scope) -> int:
    raw = _header(scope, "last-event-id") or "0"
    return int(raw) if raw.isdigit() and len(raw) < 19 else -1


def _client(scope: Scope, transport: str, speaks: Speaks = "acp") -> Client:
    host, port = scope.get("client") or ("?", 0)
    return Client(f"{host}:{port}", time.time(), transport, speaks)
