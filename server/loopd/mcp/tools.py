"""MCP tools as loopd tools: namespaced names, declarations, results for the model.

A server's tool `create_issue` on server `github` is offered as
`mcp__github__create_issue`: both parts reduced to the charset every provider
accepts (`[A-Za-z0-9_-]`), the whole at most 64 characters (a longer name keeps its
start and gets a short hash of the original, so two long names stay apart).

A call declares no paths and no command: loopd cannot know what a server's tool
touches, so the policy asks the person unless a rule (`mcp__github__create_issue`,
or an "always" answer) allows it. The server's `readOnlyHint` only picks the icon:
every call moves the session's write ledger, so a check of done made before it is
stale (what the server changed is unknown, and a server's word is not a boundary).

Images in a result (PNG, JPEG, GIF or WebP, valid base64, at most 5 MB, as the
providers accept) go to the model as images and to the editor as image content; an
image that is not one of those is named in the text instead, so one bad block
cannot make every later request of the session fail.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.mcp.client import CallOutcome, McpClient, McpToolInfo
from loopd.mcp.rpc import McpError
from loopd.protocol.events import ImageBlock, TextBlock, ToolKind
from loopd.protocol.messages import ImagePart
from loopd.tools.base import Args, failure
from loopd.tools.env import ToolEnv

NAME_LIMIT = 64
IMAGE_LIMIT = 5 * 1024 * 1024  # decoded bytes
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """The name the model calls `tool` of `server` by."""
    name = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= NAME_LIMIT:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: NAME_LIMIT - 9]}_{digest}"


@dataclass(frozen=True, slots=True)
class McpTool:
    """One server tool behind the `Tool` shape; `name` is the namespaced one.
    `settled` returns once a tool list the server changed during the call is in."""

    name: str
    client: McpClient
    info: McpToolInfo
    settled: Callable[[], Awaitable[None]]

    @property
    def description(self) -> str:
        return self.info.description or f"The {self.info.name} tool of {self.client.name}."

    @property
    def input_schema(self) -> Mapping[str, Any]:
        return self.info.input_schema

    @property
    def kind(self) -> ToolKind:
        if not self.info.read_only:
            return "other"
        return "fetch" if self.info.open_world else "read"

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        return Declaration(
            title=f"{self.client.name}: {self.info.title or self.info.name}", kind=self.kind
        )

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        env.changes.ledger.note()  # it may change anything (see the module doc)
        try:
            outcome = await self.client.call(self.info.name, args)
        except McpError as err:
            return failure(f"The MCP server {self.client.name!r} failed: {err}")
        await self.settled()
        text = result_text(outcome)
        images = result_images(outcome)
        structured = outcome.structured if isinstance(outcome.structured, dict) else None
        return ToolResult(
            output=text,
            is_error=outcome.is_error,
            content=(TextBlock(text), *(ImageBlock(i.data, i.media_type) for i in images)),
            raw_output=structured,
            images=images,
        )


def result_images(outcome: CallOutcome) -> tuple[ImagePart, ...]:
    """The result's images the model can be given, in order."""
    return tuple(ImagePart(b["mimeType"], b["data"]) for b in outcome.content if usable_image(b))


def usable_image(block: Mapping[str, Any]) -> bool:
    """An MCP image block a provider will take (type, size, valid base64)."""
    data, kind = block.get("data"), block.get("mimeType")
    if block.get("type") != "image" or kind not in IMAGE_TYPES or not isinstance(data, str):
        return False
    if len(data) > IMAGE_LIMIT * 4 // 3 + 4:
        return False
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def result_text(outcome: CallOutcome) -> str:
    """What the model reads: the text of every content block, in order; blocks that
    are not text are named, not inlined (a usable image is attached after the text);
    structured content when nothing else came."""
    parts = [_block_text(b) for b in outcome.content]
    if not parts and outcome.structured is not None:
        parts.append(json.dumps(outcome.structured, ensure_ascii=False))
    text = "\n".join(parts)
    if text:
        return text
    return "The tool reported an error without details." if outcome.is_error else "(no output)"


def _block_text(block: Mapping[str, Any]) -> str:
    match block.get("type"):
        case "text":
            return str(block.get("text", ""))
        case "image" | "audio" as kind:
            size = len(str(block.get("data", ""))) * 3 // 4
            shown = "attached" if usable_image(block) else "not shown"
            return f"[{kind} {block.get('mimeType', '')}, {size} bytes, {shown}]"
        case "resource_link":
            return f"[resource {block.get('uri', '')} {block.get('name', '')}]".replace(" ]", "]")
        case "resource":
            resource = block.get("resource")
            text = resource.get("text") if isinstance(resource, dict) else None
            if isinstance(text, str):
                return text
            uri = resource.get("uri", "") if isinstance(resource, dict) else ""
            return f"[binary resource {uri}, not shown]"
        case _:
            return json.dumps(block, ensure_ascii=False)
