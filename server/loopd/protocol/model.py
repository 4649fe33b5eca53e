"""What the engine asks a model, and the normalised stream every provider answers with.

Three wire formats (Anthropic Messages, OpenAI Chat, OpenAI Responses) collapse into
one stream: deltas for the screen while the reply streams, then exactly one
`ResponseDone` holding the assembled assistant parts. Assembly (tool-call fragments,
thinking signatures) is the provider's job because only the provider knows its
format's quirks; the engine only ever sees whole parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from loopd.protocol.messages import Message, Part


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as offered to the model: name, prose, JSON Schema of its input."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        return self.context_tokens + self.output_tokens

    @property
    def context_tokens(self) -> int:
        """What the prompt of this request cost: every input token, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


ThinkingLevel = Literal["off", "low", "medium", "high"]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 8192
    thinking: ThinkingLevel = "off"


# Why the model stopped, normalised. `tool_use` means "run the tools and call me
# again"; `pause_turn` means "send the same conversation back to continue".
ModelStop = Literal["end_turn", "tool_use", "max_tokens", "refusal", "pause_turn"]


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallBegin:
    """A tool call was announced; its input is still streaming."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ResponseDone:
    """The reply is complete. `parts` are in the model's order; a tool input that did
    not parse (cut off by max_tokens, say) is delivered with the raw text under
    `"__invalid_json__"` so the engine can report it as a tool error."""

    parts: tuple[Part, ...]
    stop: ModelStop
    usage: Usage = field(default_factory=Usage)


StreamEvent = TextDelta | ThinkingDelta | ToolCallBegin | ResponseDone

INVALID_JSON_KEY = "__invalid_json__"
