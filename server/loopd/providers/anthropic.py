"""Anthropic Messages API, streamed (`POST {base}/v1/messages`).

Requests stay inside what both `anthropic-version` 2023-06-01 and 2026-10-21
accept, so switching versions is a setting: never temperature/top_p/top_k, no
documents in assistant turns. Prompt caching is three `cache_control` breakpoints
(the API allows four): the last tool, the system prompt and the latest user turn,
which together cache the whole prefix of a tool loop. Signed thinking blocks are
echoed back verbatim, as the API requires in tool loops; unsigned ones (from another
provider) are dropped because Anthropic would reject them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, assert_never

import httpx

from loopd.protocol import messages, model
from loopd.providers.body import (
    FragmentCache,
    Memo,
    Raw,
    dumps,
    elements,
    encode_object,
    join_array,
)
from loopd.providers.classify import error_from_payload
from loopd.providers.sse import (
    DEFAULT_IDLE_TIMEOUT,
    JsonObject,
    SseEndpoint,
    SseProvider,
    bearer_auth,
    incomplete,
    load_event,
    parse_tool_input,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"
PATH = "/v1/messages"
_CACHE = {"type": "ephemeral"}
# Thinking budgets per level. The budget counts within max_tokens and must be at
# least 1024: it is capped at half of max_tokens (the answer needs room too) and
# thinking is left off when that is below 1024.
_BUDGETS: Mapping[model.ThinkingLevel, int] = {
    "off": 0,
    "low": 4096,
    "medium": 10_000,
    "high": 32_000,
}
_STOPS: Mapping[str, model.ModelStop] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
    "pause_turn": "pause_turn",
}


class AnthropicProvider(SseProvider):
    """Streams replies from the Messages API. `bearer=True` sends
    `Authorization: Bearer` instead of `x-api-key`, for gateways that want it."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        version: str = DEFAULT_VERSION,
        bearer: bool = False,
        client: httpx.AsyncClient | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        auth = bearer_auth(api_key) if bearer else ({"x-api-key": api_key} if api_key else {})
        headers = {**auth, "anthropic-version": version}
        endpoint = SseEndpoint(base_url, headers, client=client, idle_timeout=idle_timeout)
        super().__init__(endpoint, PATH, RequestEncoder(), _Decoder)


# ---- request ----


class RequestEncoder:
    """Request bodies for one provider instance. History messages are encoded once
    and reused (see body.py); the latest user turn, which carries the moving cache
    breakpoint, is encoded fresh each time."""

    def __init__(self) -> None:
        self._history = FragmentCache(_message)
        self._system: Memo[str] = Memo(_system)
        self._tools: Memo[tuple[model.ToolSpec, ...]] = Memo(_tools)

    def encode(self, request: model.ModelRequest) -> bytes:
        body: JsonObject = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "stream": True,
            "messages": self._messages(request.messages),
        }
        if request.system:
            body["system"] = self._system(request.system)
        if request.tools:
            body["tools"] = self._tools(request.tools)
        budget = min(_BUDGETS[request.thinking], request.max_tokens // 2)
        if budget >= 1024:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return encode_object(body)

    def _messages(self, history: tuple[messages.Message, ...]) -> Raw:
        fragments = self._history.fragments(history)
        latest = next(
            (
                i
                for i in reversed(range(len(history)))
                if fragments[i] and history[i].role == "user"
            ),
            None,
        )
        if latest is not None:
            fragments[latest] = _message(history[latest], cache_breakpoint=True)
        return join_array(fragments)


def _system(system: str) -> bytes:
    return dumps([{"type": "text", "text": system, "cache_control": _CACHE}])


def _tools(specs: tuple[model.ToolSpec, ...]) -> bytes:
    tools = [
        {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
        for t in specs
    ]
    tools[-1]["cache_control"] = _CACHE
    return dumps(tools)


def _message(message: messages.Message, *, cache_breakpoint: bool = False) -> bytes:
    """The message as a body fragment, empty when none of its parts go to Anthropic
    (an empty message would be rejected)."""
    blocks = [b for p in message.parts if (b := _block(p)) is not None]
    if blocks and cache_breakpoint:
        blocks[-1]["cache_control"] = _CACHE
    return elements([{"role": message.role, "content": blocks}] if blocks else [])


def _block(part: messages.Part) -> JsonObject | None:
    match part:
        case messages.TextPart(text):
            return {"type": "text", "text": text} if text else None
        case messages.ImagePart():
            return _image(part)
        case messages.ThinkingPart(text, signature, redacted):
            if redacted:
                return {"type": "redacted_thinking", "data": redacted}
            if not signature:
                return None
            return {"type": "thinking", "thinking": text, "signature": signature}
        case messages.ToolUsePart(id_, name, input_):
            return {"type": "tool_use", "id": id_, "name": name, "input": dict(input_)}
        case messages.ToolResultPart(tool_use_id, content, is_error, images):
            blocks = [{"type": "text", "text": content}, *(_image(i) for i in images)]
            return {
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": blocks if images else content,
                "is_error": is_error,
            }
        case _:
            assert_never(part)


def _image(part: messages.ImagePart) -> JsonObject:
    source = {"type": "base64", "media_type": part.media_type, "data": part.data}
    return {"type": "image", "source": source}


# ---- response ----


@dataclass(slots=True)
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)
    signature: str = ""
    redacted: str = ""
    id: str = ""
    name: str = ""

    def part(self) -> messages.Part | None:
        joined = "".join(self.text)
        match self.kind:
            case "text":
                return messages.TextPart(joined) if joined else None
            case "thinking":
                return messages.ThinkingPart(joined, signature=self.signature)
            case "redacted_thinking":
                return messages.ThinkingPart("", redacted=self.redacted)
            case "tool_use":
                return messages.ToolUsePart(self.id, self.name, parse_tool_input(joined))
        return None  # server tools and block types newer than this code


class _Decoder:
    """Assembles content blocks by index. `message_delta` usage is cumulative, so it
    overwrites what `message_start` reported, field by field."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, int] = {}
        self._stop = ""
        self.done = False

    def feed(self, event: str, data: str) -> Iterator[model.StreamEvent]:
        payload = load_event(data)
        if payload is None:
            return
        match payload.get("type", event):
            case "message_start":
                self._take_usage(payload.get("message", {}).get("usage"))
            case "content_block_start":
                yield from self._start(payload["index"], payload.get("content_block", {}))
            case "content_block_delta":
                yield from self._delta(payload["index"], payload.get("delta", {}))
            case "message_delta":
                self._stop = payload.get("delta", {}).get("stop_reason") or self._stop
                self._take_usage(payload.get("usage"))
            case "message_stop":
                self.done = True
            case "error":
                raise error_from_payload(payload)

    def finish(self) -> model.ResponseDone:
        if not self.done:
            raise incomplete("message_stop")
        parts = tuple(
            part for _, b in sorted(self._blocks.items()) if (part := b.part()) is not None
        )
        stop = _STOPS.get(self._stop, "end_turn")
        if stop == "end_turn" and any(isinstance(p, messages.ToolUsePart) for p in parts):
            stop = "tool_use"
        u = self._usage
        usage = model.Usage(
            input_tokens=u.get("input_tokens", 0),
            output_tokens=u.get("output_tokens", 0),
            cache_read_tokens=u.get("cache_read_input_tokens", 0),
            cache_write_tokens=u.get("cache_creation_input_tokens", 0),
        )
        return model.ResponseDone(parts, stop, usage)

    def _start(self, index: int, block: Mapping[str, Any]) -> Iterator[model.StreamEvent]:
        kind = str(block.get("type", ""))
        new = _Block(kind, id=block.get("id", ""), name=block.get("name", ""))
        new.redacted = block.get("data", "") if kind == "redacted_thinking" else ""
        for key in ("text", "thinking"):
            if block.get(key):
                new.text.append(block[key])
        if kind == "tool_use" and block.get("input"):  # whole input up front, no deltas
            new.text.append(json.dumps(block["input"]))
        self._blocks[index] = new
        if kind == "tool_use":
            yield model.ToolCallBegin(new.id, new.name)

    def _delta(self, index: int, delta: Mapping[str, Any]) -> Iterator[model.StreamEvent]:
        block = self._blocks.get(index)
        if block is None:
            return
        match delta.get("type"):
            case "text_delta":
                block.text.append(delta["text"])
                yield model.TextDelta(delta["text"])
            case "thinking_delta":
                block.text.append(delta["thinking"])
                yield model.ThinkingDelta(delta["thinking"])
            case "signature_delta":
                block.signature += delta["signature"]
            case "input_json_delta":
                block.text.append(delta.get("partial_json", ""))

    def _take_usage(self, usage: Mapping[str, Any] | None) -> None:
        for key, value in (usage or {}).items():
            if isinstance(value, int):
                self._usage[key] = value
