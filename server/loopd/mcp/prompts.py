"""MCP prompts as slash commands: `/mcp__server__prompt words...`.

A server's prompt is a template the person fills in; loopd offers each one as a
command named like its tools (`loopd.mcp.tools.tool_name`), with the argument
names as the input hint. The words after the command fill the arguments in order,
the last one taking the rest of the line. The server's filled-in messages become
the prompt of a normal turn: text, images, embedded and linked resources, as if
the person had typed or attached them (an image no provider takes is named, as in
tool results).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopd.mcp.client import McpClient, McpPromptInfo
from loopd.mcp.rpc import McpError
from loopd.mcp.tools import usable_image
from loopd.protocol.events import (
    Command,
    ContentBlock,
    EmbeddedResourceBlock,
    FilledPrompt,
    ImageBlock,
    Prompt,
    ResourceLinkBlock,
    TextBlock,
)


@dataclass(frozen=True, slots=True)
class McpPrompt:
    """One server prompt; `name` is the namespaced command name."""

    name: str
    client: McpClient
    info: McpPromptInfo

    @property
    def command(self) -> Command:
        hint = " ".join(a.name if a.required else f"[{a.name}]" for a in self.info.arguments)
        text = self.info.description or f"The {self.info.name} prompt of {self.client.name}"
        return Command(self.name, f"{text} (MCP: {self.client.name})", hint or None)

    async def expand(self, text: str) -> Prompt:
        """The prompt the server fills in from `text`. Raises `McpError` when a
        required argument is missing or the server fails."""
        messages = await self.client.get_prompt(self.info.name, self.arguments(text))
        blocks = tuple(_block(m.get("content")) for m in messages)
        if not blocks:
            raise McpError(f"the server filled in /{self.name} with nothing")
        return FilledPrompt(blocks)

    def arguments(self, text: str) -> dict[str, str]:
        names = [a.name for a in self.info.arguments]
        words = text.split(maxsplit=len(names) - 1) if names else []
        given = dict(zip(names, words, strict=False))
        missing = [a.name for a in self.info.arguments if a.required and a.name not in given]
        if missing:
            usage = f"/{self.name} {self.command.hint}"
            raise McpError(f"/{self.name} needs {', '.join(missing)}: {usage}")
        return given


def _block(content: Any) -> ContentBlock:
    block: Mapping[str, Any] = content if isinstance(content, dict) else {}
    match block.get("type"):
        case "text":
            return TextBlock(str(block.get("text", "")))
        case "image" if usable_image(block):
            return ImageBlock(block["data"], block["mimeType"])
        case "resource_link" if isinstance(block.get("uri"), str):
            name = str(block.get("name") or block["uri"])
            return ResourceLinkBlock(block["uri"], name, block.get("mimeType"))
        case "resource":
            resource = block.get("resource")
            if isinstance(resource, dict) and isinstance(resource.get("text"), str):
                uri = str(resource.get("uri", ""))
                return EmbeddedResourceBlock(uri, resource["text"], resource.get("mimeType"))
    return TextBlock(json.dumps(block, ensure_ascii=False))
