"""`McpClient`: one connected MCP server, the part of the protocol loopd uses.

The lifecycle is the spec's: `initialize` (we ask for the latest revision we know;
the server answers with one of the revisions we know, any of which we speak, or the
server is refused: the spec's "disconnect", since its messages might mean something
else), then `notifications/initialized`, then `tools/list`
page by page (and `prompts/list` and `resources/list` when the server offers
prompts and resources), then `tools/call` as the model asks, `prompts/get` and
`resources/read` as the person does. An HTTP server that forgets our
session (`McpExpired`) gets one new handshake and the request again. We declare no client
capabilities: no sampling, no roots, no elicitation, so a server never has a reason
to call back beyond `ping`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopd import __version__
from loopd.engine.ports import Clock
from loopd.mcp.config import McpServerConfig
from loopd.mcp.http import HttpTransport
from loopd.mcp.rpc import JsonObject, McpError, McpExpired, RpcPeer, Transport
from loopd.mcp.stdio import StdioTransport

log = logging.getLogger(__name__)

PROTOCOL_VERSION = "2025-11-25"
KNOWN_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", PROTOCOL_VERSION})
MAX_PAGES = 100  # a server whose cursors never end is cut off here
MAX_RESOURCES = 1000  # per server: more would only flood the editor's @ menu
MAX_CONTENTS = 16  # contents of one `resources/read` looked at (a folder may list many)


@dataclass(frozen=True, slots=True)
class McpTimeouts:
    """Seconds. `startup` bounds each request of the start (`initialize`, each page
    of `tools/list`) and each read of a mentioned resource; `call` bounds one tool
    call; `close` is what a stdio server gets to exit once its stdin is closed,
    before its process group is killed."""

    startup: float = 30.0
    call: float = 300.0
    close: float = 1.0


@dataclass(frozen=True, slots=True)
class McpToolInfo:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool = False  # the server's `readOnlyHint`: a hint, never trusted alone
    open_world: bool = True  # `openWorldHint`: it reaches beyond the machine (the default)
    title: str | None = None


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class McpPromptInfo:
    """A prompt as the server lists it: a template the person fills in."""

    name: str
    description: str
    arguments: tuple[PromptArgument, ...] = ()


@dataclass(frozen=True, slots=True)
class McpResourceInfo:
    """A resource as the server lists it: context the person may @-mention."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """A `tools/call` result: its content blocks, structured content, error flag."""

    content: tuple[Mapping[str, Any], ...] = ()
    structured: Any = None
    is_error: bool = False


@dataclass(eq=False)
class McpClient:
    name: str
    peer: RpcPeer
    transport: Transport
    timeouts: McpTimeouts
    capabilities: JsonObject = field(default_factory=dict)  # the server's, at initialize
    _handshakes: int = 0
    _renewing: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    async def connect(
        cls,
        config: McpServerConfig,
        *,
        cwd: str,
        base_env: Mapping[str, str],
        clock: Clock,
        timeouts: McpTimeouts,
    ) -> McpClient:
        """Start the transport and run the handshake. Raises `McpError`; on failure
        everything started is closed again. The caller bounds the wait."""
        peer = RpcPeer(config.name, clock)
        transport: Transport
        if config.command is not None:
            transport = await StdioTransport.spawn(
                peer, config, base_env, cwd, clock, timeouts.close
            )
        elif config.url is not None:
            transport = HttpTransport(peer, config.url, config.headers)
        else:
            raise McpError("the server has neither a command nor a url")
        peer.attach(transport)
        client = cls(config.name, peer, transport, timeouts)
        try:
            await client._initialize()
        except BaseException:
            await transport.aclose()
            raise
        return client

    async def _initialize(self) -> None:
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "loopd", "version": __version__},
        }
        result = await self.peer.request("initialize", params, self.timeouts.startup)
        version = result.get("protocolVersion")
        if not isinstance(version, str):
            raise McpError("the initialize answer names no protocolVersion")
        if version not in KNOWN_VERSIONS:
            known = ", ".join(sorted(KNOWN_VERSIONS))
            raise McpError(
                f"the server speaks MCP revision {version!r}, which loopd does not know "
                f"(it knows {known})"
            )
        self.transport.negotiated(version)
        self.capabilities = _object(result.get("capabilities"))
        await self.peer.notify("notifications/initialized")
        self._handshakes += 1

    async def _request(self, method: str, params: JsonObject, seconds: float) -> JsonObject:
        """`peer.request`, once more after a new handshake if the session expired
        (requests that met the same expiry share that one handshake)."""
        handshakes = self._handshakes
        try:
            return await self.peer.request(method, params, seconds)
        except McpExpired:
            async with self._renewing:
                if self._handshakes == handshakes:
                    log.info("mcp %s: the session expired; initialising again", self.name)
                    await self._initialize()
            return await self.peer.request(method, params, seconds)

    async def list_tools(self) -> list[McpToolInfo]:
        """Every tool, following `nextCursor`. Malformed entries are skipped."""
        return [t for t in map(_tool_info, await self._listed("tools")) if t is not None]

    async def list_prompts(self) -> list[McpPromptInfo]:
        """Every prompt, when the server declares prompts (else none)."""
        if "prompts" not in self.capabilities:
            return []
        return [p for p in map(_prompt_info, await self._listed("prompts")) if p is not None]

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> list[JsonObject]:
        """The prompt's messages (`role`, `content`), as the server filled it in."""
        params = {"name": name, "arguments": dict(arguments)}
        result = await self._request("prompts/get", params, self.timeouts.call)
        messages = result.get("messages")
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    async def list_resources(self) -> list[McpResourceInfo]:
        """The first `MAX_RESOURCES` resources, when the server declares resources
        (else none). Malformed entries and repeated uris are skipped."""
        if "resources" not in self.capabilities:
            return []
        listed = await self._listed("resources", MAX_RESOURCES)
        unique: dict[str, McpResourceInfo] = {}
        for info in map(_resource_info, listed):
            if info is not None:
                unique.setdefault(info.uri, info)
        return list(unique.values())

    async def read_resource(self, uri: str) -> list[JsonObject]:
        """The first `MAX_CONTENTS` contents of `resources/read` (each `uri`,
        `mimeType`, and `text` or base64 `blob`), as the server sent them. A read
        starts a turn, so it gets `startup`, not a tool call's time."""
        result = await self._request("resources/read", {"uri": uri}, self.timeouts.startup)
        contents = result.get("contents")
        listed = [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []
        return listed[:MAX_CONTENTS]

    async def _listed(self, kind: str, limit: int | None = None) -> list[Any]:
        """Every entry of `{kind}/list` (the first `limit`), following `nextCursor`."""
        entries: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = {} if cursor is None else {"cursor": cursor}
            page = await self._request(f"{kind}/list", params, self.timeouts.startup)
            listed = page.get(kind)
            entries += listed if isinstance(listed, list) else []
            cursor = page.get("nextCursor")
            if limit is not None and len(entries) >= limit:
                if isinstance(cursor, str) and cursor:
                    log.warning("mcp %s: kept the first %d %s", self.name, limit, kind)
                return entries[:limit]
            if not isinstance(cursor, str) or not cursor:
                return entries
        log.warning("mcp %s: stopped listing %s after %d pages", self.name, kind, MAX_PAGES)
        return entries

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> CallOutcome:
        """Raises `McpError` (a protocol error, a timeout, a closed connection); a tool
        that failed in its own terms is an outcome with `is_error`."""
        params = {"name": tool, "arguments": dict(arguments)}
        result = await self._request("tools/call", params, self.timeouts.call)
        content = result.get("content")
        blocks = (
            tuple(b for b in content if isinstance(b, dict)) if isinstance(content, list) else ()
        )
        return CallOutcome(blocks, result.get("structuredContent"), result.get("isError") is True)

    async def aclose(self) -> None:
        await self.transport.aclose()


def _tool_info(raw: Any) -> McpToolInfo | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        return None
    schema = _object(raw.get("inputSchema"))
    annotations = _object(raw.get("annotations"))
    title = raw.get("title") or annotations.get("title")
    return McpToolInfo(
        name=raw["name"],
        description=str(raw.get("description") or ""),
        input_schema=schema or {"type": "object", "properties": {}},
        read_only=annotations.get("readOnlyHint") is True,
        open_world=annotations.get("openWorldHint") is not False,
        title=title if isinstance(title, str) else None,
    )


def _prompt_info(raw: Any) -> McpPromptInfo | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        return None
    arguments = tuple(
        PromptArgument(a["name"], str(a.get("description") or ""), a.get("required") is True)
        for a in raw.get("arguments") or ()
        if isinstance(a, dict) and isinstance(a.get("name"), str)
    )
    return McpPromptInfo(raw["name"], str(raw.get("description") or ""), arguments)


def _resource_info(raw: Any) -> McpResourceInfo | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("uri"), str) or not raw["uri"]:
        return None
    texts = {k: raw.get(k) for k in ("name", "title", "description", "mimeType")}
    name, title, description, mime = (
        v if isinstance(v, str) and v else None for v in texts.values()
    )
    return McpResourceInfo(raw["uri"], name or raw["uri"], title, description, mime)


def _object(value: Any) -> JsonObject:
    return value if isinstance(value, dict) else {}
