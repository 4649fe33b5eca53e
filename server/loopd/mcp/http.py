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
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
from httpx_sse import EventSource, SSEError

from loopd.mcp.rpc import McpClosed, McpError, McpExpired, RpcPeer, within
from loopd.protocol.jsonvalues import loads_bounded

log = logging.getLogger(__name__)

SESSION_HEADER = "Mcp-Session-Id"
CLOSE_TIMEOUT = 2.0


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
        except (SSEError, ValueError) as err:
            raise McpError(f"{self.url} sent an unreadable reply: {err}") from err

    async def _reply(self, sent: Mapping[str, Any], response: httpx.Response) -> None:
        if response.status_code == 404 and SESSION_HEADER in response.request.headers:
            self.session_id = None
            raise McpExpired("the server ended the session (HTTP 404)")
        if response.status_code >= 400:
            text = (await response.aread()).decode(errors="replace").strip()
            raise McpError(f"HTTP {response.status_code} from {self.url}: {text[:300]}")
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


async def _messages(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of a reply: a JSON object or batch, or SSE events."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        data = loads_bounded(await response.aread())
        for message in data if isinstance(data, list) else [data]:
            if isinstance(message, dict):
                yield message
    elif kind == "text/event-stream":
        async for event in EventSource(response).aiter_sse():
            if event.data.strip():
                message = loads_bounded(event.data)
                if isinstance(message, dict):
                    yield message
    else:
        raise McpError(f"the reply has content type {kind or 'none'}, not JSON or SSE")
