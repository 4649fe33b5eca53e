"""MCP resources as @-mentionable context: listed for the editor, read into a prompt.

A prompt's `resource_link` whose uri is one a server listed (exactly: no prefix, no
template, no normalising) is read through that server (`resources/read`) and takes
the link's place: text as an embedded resource (what the model reads as
`<resource uri=...>`), a PNG, JPEG, GIF or WebP blob as an image, any other blob
named with its type and size. A link to anything else is left as it is and never
fetched: the editor cannot make loopd read a uri no server offered (a file, a URL
on the network), and a server cannot be made to read one it did not list.

Bounds: at most `MAX_MENTIONS` links of one prompt are read (the rest stay links),
each read's text is cut at `TEXT_LIMIT` characters in all, and a read waits at most
`McpTimeouts.startup`. A read that fails becomes a line saying so: the turn runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopd.mcp.client import McpClient, McpResourceInfo
from loopd.mcp.rpc import McpError
from loopd.mcp.tools import usable_image
from loopd.protocol import events
from loopd.protocol.wire.shapes import Mention

log = logging.getLogger(__name__)

MAX_MENTIONS = 20  # links read per prompt
TEXT_LIMIT = 100_000  # characters of text per mention (as the read tool's cap)


@dataclass(frozen=True, slots=True)
class McpResource:
    """One resource a server listed."""

    client: McpClient
    info: McpResourceInfo

    @property
    def mention(self) -> Mention:
        i = self.info
        return Mention(
            server=self.client.name,
            uri=i.uri,
            name=i.name,
            title=i.title,
            description=i.description,
            mime_type=i.mime_type,
        )

    async def read(self) -> tuple[events.ContentBlock, ...]:
        """The resource's contents as prompt blocks; a failure is one text block."""
        uri, server = self.info.uri, self.client.name
        try:
            contents = await self.client.read_resource(uri)
        except McpError as err:
            log.warning("mcp %s: reading %s failed: %s", server, uri, err)
            return (
                events.TextBlock(
                    f"[The resource {uri} of MCP server {server} could not be read: {err}]"
                ),
            )
        blocks: list[events.ContentBlock] = []
        budget = TEXT_LIMIT
        for content in contents:
            block, budget = _block(content, uri, budget)
            blocks.append(block)
        return tuple(blocks) or (
            events.TextBlock(f"[The resource {uri} of MCP server {server} is empty]"),
        )


async def resolve(prompt: events.Prompt, offered: Sequence[McpResource]) -> events.Prompt:
    """`prompt` with each link to an offered resource replaced by its contents (the
    first server to list a uri reads it). Reads run together."""
    by_uri: dict[str, McpResource] = {}
    for resource in offered:
        by_uri.setdefault(resource.info.uri, resource)
    reads: dict[int, McpResource] = {}
    for i, block in enumerate(prompt.blocks):
        if isinstance(block, events.ResourceLinkBlock) and block.uri in by_uri:
            reads[i] = by_uri[block.uri]
    if not reads:
        return prompt
    if len(reads) > MAX_MENTIONS:
        log.warning(
            "a prompt mentions %d resources; reading the first %d", len(reads), MAX_MENTIONS
        )
        reads = dict(list(reads.items())[:MAX_MENTIONS])
    read = await asyncio.gather(*(r.read() for r in reads.values()))
    replaced = dict(zip(reads, read, strict=True))
    blocks: list[events.ContentBlock] = []
    for i, block in enumerate(prompt.blocks):
        blocks.extend(replaced.get(i, (block,)))
    return events.Prompt(tuple(blocks))


def _block(content: Mapping[str, Any], uri: str, budget: int) -> tuple[events.ContentBlock, int]:
    """One item of `contents` as a block, and the text budget left after it."""
    where = content.get("uri") if isinstance(content.get("uri"), str) else uri
    mime = content.get("mimeType") if isinstance(content.get("mimeType"), str) else None
    text, blob = content.get("text"), content.get("blob")
    if isinstance(text, str):
        shown = text[: max(budget, 0)]
        if len(shown) < len(text):
            shown += f"\n[... cut: {len(shown)} of {len(text)} characters shown]"
        return events.EmbeddedResourceBlock(str(where), shown, mime), budget - len(text)
    if isinstance(blob, str) and usable_image({"type": "image", "data": blob, "mimeType": mime}):
        return events.ImageBlock(blob, str(mime), str(where)), budget
    kind = mime or "unknown type"
    size = len(blob.rstrip("=")) * 3 // 4 if isinstance(blob, str) else 0  # base64's
    return events.TextBlock(f"[binary resource {where} ({kind}, {size} bytes), not shown]"), budget
