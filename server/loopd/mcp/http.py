"""The streamable HTTP transport: every message is a POST to the server's one URL.

The reply to a request is either one JSON body or a server-sent event stream that
carries the answer (possibly after requests and notices of the server's own, which
go to the peer like any other message); we read the stream until our answer has
passed. The `Mcp-Session-Id` the server gives at `initialize` goes on every later
message, with the negotiated `MCP-Protocol-Version`, and closing DELETEs the
session. A 404 to a message that carried the id means the server ended the session:
the id is dropped and `McpExpired` raised, so the client can initialise again.
Headers from the editor's config go on every request.

Timeouts are the peer's (one per request, on its clock); httpx only bounds the
connect, so a slow tool is not cut off by a read timeout of its own.

A reply is read as it streams, never held whole: a JSON body, or one event of a
stream, may be at most `REPLY_LIMIT` bytes (as long as a stdio server's longest
line), and the reply is refused at the byte that passes it; of an error's body only
its first bytes are read, to quote.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from loopd.mcp.rpc import McpClosed, McpError, McpExpired, RpcPeer, within
from loopd.mcp.stdio import LINE_LIMIT

log = logging.getLogger(__name__)

SESSION_HEADER = "Mcp-Session-Id"
CLOSE_TIMEOUT = 2.0
REPLY_LIMIT = LINE_LIMIT  # bytes of one message in a reply
QUOTED = 300  # characters of an error's body quoted


class HttpTransport:
    def __init__(self, peer: RpcPeer, url: str, headers: Mapping[str, str]) -> None:
        self.peer = peer
        self.url = url
        self.headers = dict(headers)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0))

    def negotiated(self, version: str) -> None:
        self.protocol_version = version

    def _headers(self) -> dict[str, str]:
        headers = {
            **self.headers,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def send(self, message: Mapping[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        try:
            async with self.client.stream(
                "POST", self.url, content=body, headers=self._headers()
            ) as response:
                await self._reply(message, response)
        except httpx.HTTPError as err:
            raise McpClosed(f"{self.url}: {type(err).__name__}: {err}") from err
        except ValueError as err:
            raise McpError(f"{self.url} sent an unreadable reply: {err}") from err
        except TooLong as err:
            raise McpError(f"{self.url} sent {err}; refused") from None

    async def _reply(self, sent: Mapping[str, Any], response: httpx.Response) -> None:
        if response.status_code == 404 and SESSION_HEADER in response.request.headers:
            self.session_id = None
            raise McpExpired("the server ended the session (HTTP 404)")
        if response.status_code >= 400:
            text = (await _head(response, 4 * QUOTED)).decode(errors="replace").strip()
            raise McpError(f"HTTP {response.status_code} from {self.url}: {text[:QUOTED]}")
        if sent.get("method") == "initialize" and SESSION_HEADER in response.headers:
            self.session_id = response.headers[SESSION_HEADER]
        if "id" not in sent or "method" not in sent:
            return  # a notification or our answer: 202 and no body
        answered = False
        async for message in _messages(response):
            await self.peer.receive(message)
            if message.get("id") == sent["id"] and "method" not in message:
                answered = True
                break
        if not answered:
            raise McpError(f"{self.url} replied without answering {sent['method']}")

    async def aclose(self) -> None:
        if self.session_id is not None:
            try:
                await within(
                    self.peer.clock,
                    CLOSE_TIMEOUT,
                    self.client.delete(self.url, headers=self._headers()),
                    "closing the session",
                )
            except (httpx.HTTPError, McpError) as err:
                log.debug("mcp %s: DELETE failed: %s", self.peer.name, err)
        await self.client.aclose()
        self.peer.close("the session closed")


class TooLong(Exception):
    """A reply passed `REPLY_LIMIT`."""


async def _messages(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of a reply: a JSON object or batch, or SSE events."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        data = json.loads(await _head(response, REPLY_LIMIT, refuse=True))
        for message in data if isinstance(data, list) else [data]:
            if isinstance(message, dict):
                yield message
    elif kind == "text/event-stream":
        async for data in _events(response):
            if data.strip():
                message = json.loads(data)
                if isinstance(message, dict):
                    yield message
    else:
        raise McpError(f"the reply has content type {kind or 'none'}, not JSON or SSE")


async def _head(response: httpx.Response, limit: int, *, refuse: bool = False) -> bytes:
    """The body's first `limit` bytes; with `refuse`, `TooLong` if there are more."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            if refuse:
                raise TooLong(f"a reply of more than {limit:,} bytes")
            break
    return bytes(body[:limit])


_LINE_END = re.compile(r"\r\n|\r|\n")


async def _events(response: httpx.Response) -> AsyncIterator[str]:
    """The data of each server-sent event (its `data:` lines joined), each event at
    most `REPLY_LIMIT` bytes, read as the stream comes (`TooLong` past it). Each
    piece is scanned once: a long line is never split again as it grows."""
    partial: list[str] = []  # of the line not yet ended
    data: list[str] = []
    size, rest_of_crlf = 0, False
    async for text in response.aiter_text():
        size += len(text)
        if size > REPLY_LIMIT:
            raise TooLong(f"an event of more than {REPLY_LIMIT:,} bytes")
        if rest_of_crlf:
            text = text.removeprefix("\n")
        rest_of_crlf = text.endswith("\r")
        *ended, rest = _LINE_END.split(text)
        if ended:
            ended[0] = "".join(partial) + ended[0]
            partial = []
        partial.append(rest)
        for line in ended:
            if line:
                _keep_data(line, data)
            elif data:
                yield "\n".join(data)
                data, size = [], len(rest)
    _keep_data("".join(partial), data)  # a stream may end without its last newline
    if data:
        yield "\n".join(data)


def _keep_data(line: str, data: list[str]) -> None:
    """A `data:` line's value joins the event's data; other fields are not used."""
    field, _, value = line.partition(":")
    if field == "data":
        data.append(value.removeprefix(" "))
