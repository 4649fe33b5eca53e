"""The conversation as the model sees it: messages made of parts.

This is the history the engine keeps and the providers translate to their wire
formats. It is deliberately provider-neutral: a thinking part carries the opaque
signature Anthropic needs echoed back, a tool use carries its parsed input, a tool
result its text and any images the tool returned. Serialisation to plain JSON (for
the store) lives here too, so the shape has exactly one definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    media_type: str
    data: str  # base64


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """Model reasoning. `signature` (or `redacted`) must be echoed back verbatim in
    tool loops, or Anthropic rejects the next request."""

    text: str
    signature: str = ""
    redacted: str = ""


@dataclass(frozen=True, slots=True)
class ToolUsePart:
    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """`images` follow `content` (an MCP tool's screenshot, say): the model sees them
    with the result where the provider allows, next to it where it does not."""

    tool_use_id: str
    content: str
    is_error: bool = False
    images: tuple[ImagePart, ...] = ()


Part = TextPart | ImagePart | ThinkingPart | ToolUsePart | ToolResultPart


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_uses(self) -> tuple[ToolUsePart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolUsePart))

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))


def user_text(text: str) -> Message:
    return Message("user", (TextPart(text),))


def part_to_json(part: Part) -> dict[str, Any]:
    match part:
        case TextPart(text):
            return {"type": "text", "text": text}
        case ImagePart(media_type, data):
            return {"type": "image", "media_type": media_type, "data": data}
        case ThinkingPart(text, signature, redacted):
            return {"type": "thinking", "text": text, "signature": signature, "redacted": redacted}
        case ToolUsePart(id_, name, input_):
            return {"type": "tool_use", "id": id_, "name": name, "input": dict(input_)}
        case ToolResultPart(tool_use_id, content, is_error, images):
            out = {
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": content,
                "is_error": is_error,
            }
            return out | ({"images": [part_to_json(i) for i in images]} if images else {})
        case _:
            assert_never(part)


def part_from_json(data: Mapping[str, Any]) -> Part:
    kind = data["type"]
    if kind == "text":
        return TextPart(data["text"])
    if kind == "image":
        return ImagePart(data["media_type"], data["data"])
    if kind == "thinking":
        return ThinkingPart(data["text"], data.get("signature", ""), data.get("redacted", ""))
    if kind == "tool_use":
        return ToolUsePart(data["id"], data["name"], data["input"])
    if kind == "tool_result":
        images = tuple(ImagePart(i["media_type"], i["data"]) for i in data.get("images", ()))
        return ToolResultPart(
            data["tool_use_id"], data["content"], data.get("is_error", False), images
        )
    raise ValueError(f"unknown message part type {kind!r}")


def message_to_json(message: Message) -> dict[str, Any]:
    return {"role": message.role, "parts": [part_to_json(p) for p in message.parts]}


def message_from_json(data: Mapping[str, Any]) -> Message:
    role = data["role"]
    if role not in ("user", "assistant"):
        raise ValueError(f"unknown role {role!r}")
    return Message(role, tuple(part_from_json(p) for p in data["parts"]))
