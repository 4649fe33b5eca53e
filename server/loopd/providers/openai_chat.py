"""OpenAI Chat Completions, streamed (`POST {base}/chat/completions`).

This is the format every local server speaks (Ollama, vLLM, llama.cpp, LM Studio),
so the tool-call accumulator is deliberately forgiving. Known quirks it absorbs:
`finish_reason: "stop"` although tool calls streamed (a tool turn all the same),
a missing `index` or every parallel call at index 0 (a new `id`, or a different
`name`, starts a new call), the name repeated in every chunk (set, never
concatenated), `name: null` in later chunks, `arguments` sent as an object rather
than a string, `tool_calls: []` in text chunks, no usage chunk, and no `[DONE]`
after a finish reason. Reasoning streamed as `reasoning_content` or `reasoning`
(DeepSeek, vLLM, Ollama) becomes thinking; it is not sent back, as those servers
do not expect it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from loopd.protocol import messages, model
from loopd.providers.body import FragmentCache, Memo, dumps, elements, encode_object, join_array
from loopd.providers.classify import error_from_payload
from loopd.providers.sse import (
    DEFAULT_IDLE_TIMEOUT,
    Decoder,
    Encoder,
    JsonObject,
    SseEndpoint,
    SseProvider,
    bearer_auth,
    data_url,
    incomplete,
    load_event,
    parse_tool_input,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
Format = tuple[str, Encoder, Callable[[], Decoder]]  # a path, its encoder, its decoders
PATH = "/chat/completions"
_STOPS: Mapping[str, model.ModelStop] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


class OpenAIProvider(SseProvider):
    """A provider of one of OpenAI's formats: a bearer key, and a `base_url` that
    includes the `/v1` (as `OPENAI_BASE_URL` does). A subclass names its format."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        client: httpx.AsyncClient | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        endpoint = SseEndpoint(
            base_url, bearer_auth(api_key), client=client, idle_timeout=idle_timeout
        )
        super().__init__(endpoint, *self.format())

    def format(self) -> Format:
        """The path, an encoder for the provider's life, and the decoder's factory."""
        raise NotImplementedError


class OpenAIChatProvider(OpenAIProvider):
    """Streams replies from any Chat Completions endpoint."""

    def format(self) -> Format:
        return PATH, RequestEncoder(), _Decoder


# ---- request ----


class OpenAIEncoder:
    """Request bodies for one provider instance of one of OpenAI's formats: history
    messages are encoded once and reused, the tools once a set (see body.py). A
    format names how it renders a message and the tools, and builds the body."""

    def __init__(
        self,
        message: Callable[[messages.Message], bytes],
        tools: Callable[[tuple[model.ToolSpec, ...]], bytes],
    ) -> None:
        self._history = FragmentCache(message)
        self._tools = Memo(tools)

    def encode(self, request: model.ModelRequest) -> bytes:
        raise NotImplementedError


class RequestEncoder(OpenAIEncoder):
    """Chat Completions bodies: the system prompt is the first message."""

    def __init__(self) -> None:
        super().__init__(_message, _tools)

    def encode(self, request: model.ModelRequest) -> bytes:
        system = (
            [elements([{"role": "system", "content": request.system}])] if request.system else []
        )
        body: JsonObject = {
            "model": request.model,
            "messages": join_array(system + self._history.fragments(request.messages)),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": request.max_tokens,
        }
        if request.tools:
            body["tools"] = self._tools(request.tools)
        if request.thinking != "off":
            body["reasoning_effort"] = request.thinking
        return encode_object(body)


def _tools(specs: tuple[model.ToolSpec, ...]) -> bytes:
    return dumps(
        [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.input_schema),
                },
            }
            for t in specs
        ]
    )


def _message(message: messages.Message) -> bytes:
    return elements(_messages(message))


def _messages(message: messages.Message) -> Iterator[JsonObject]:
    """One of our messages as chat messages: tool results become `tool` messages
    (first, right after the assistant's calls), the rest one user/assistant message.
    A `tool` message takes text only, so a result's images open the user message,
    each set named by its call."""
    if message.role == "assistant":
        yield from _assistant(message)
        return
    content: list[JsonObject] = []
    for result in message.tool_results:
        yield {"role": "tool", "tool_call_id": result.tool_use_id, "content": result.content}
        if result.images:
            said = f"The images the tool call {result.tool_use_id} returned:"
            content += [{"type": "text", "text": said}, *map(_image_url, result.images)]
    for part in message.parts:
        if isinstance(part, messages.TextPart) and part.text:
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, messages.ImagePart):
            content.append(_image_url(part))
    if len(content) == 1 and content[0]["type"] == "text":
        yield {"role": "user", "content": content[0]["text"]}
    elif content:
        yield {"role": "user", "content": content}


def _image_url(part: messages.ImagePart) -> JsonObject:
    return {"type": "image_url", "image_url": {"url": data_url(part.media_type, part.data)}}


def _assistant(message: messages.Message) -> Iterator[JsonObject]:
    wire: JsonObject = {"role": "assistant", "content": message.text or None}
    calls = [
        {
            "id": use.id,
            "type": "function",
            "function": {"name": use.name, "arguments": json.dumps(dict(use.input))},
        }
        for use in message.tool_uses
    ]
    if calls:
        wire["tool_calls"] = calls
    if calls or message.text:
        yield wire


# ---- response ----


@dataclass(slots=True)
class _Call:
    index: int | None
    id: str = ""
    name: str = ""
    arguments: str = ""
    announced: bool = False


class _Decoder:
    def __init__(self) -> None:
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._calls: list[_Call] = []
        self._finish = ""
        self._usage = model.Usage()
        self._ended = False

    @property
    def done(self) -> bool:
        return self._ended

    def feed(self, event: str, data: str) -> Iterator[model.StreamEvent]:
        if data.strip() == "[DONE]":
            self._ended = True
            return
        chunk = load_event(data)
        if chunk is None:
            return
        if "error" in chunk:
            raise error_from_payload(chunk)
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = openai_usage(chunk["usage"])
        for choice in chunk.get("choices") or ():
            self._finish = choice.get("finish_reason") or self._finish
            yield from self._delta(choice.get("delta") or {})

    def finish(self) -> model.ResponseDone:
        if not (self._ended or self._finish):  # some servers end without [DONE]
            raise incomplete("[DONE]")
        parts: list[messages.Part] = []
        if self._thinking:
            parts.append(messages.ThinkingPart("".join(self._thinking)))
        if self._text:
            parts.append(messages.TextPart("".join(self._text)))
        parts += [
            messages.ToolUsePart(c.id, c.name, parse_tool_input(c.arguments)) for c in self._calls
        ]
        stop = "tool_use" if self._calls else _STOPS.get(self._finish, "end_turn")
        return model.ResponseDone(tuple(parts), stop, self._usage)

    def _delta(self, delta: Mapping[str, Any]) -> Iterator[model.StreamEvent]:
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._thinking.append(reasoning)
            yield model.ThinkingDelta(reasoning)
        if delta.get("content"):
            self._text.append(delta["content"])
            yield model.TextDelta(delta["content"])
        for fragment in delta.get("tool_calls") or ():
            yield from self._tool_fragment(fragment)

    def _tool_fragment(self, fragment: Mapping[str, Any]) -> Iterator[model.StreamEvent]:
        function = fragment.get("function") or {}
        call_id, name = fragment.get("id") or "", function.get("name") or ""
        call = self._slot(fragment.get("index"), call_id, name)
        call.id = call.id or call_id
        call.name = name or call.name
        arguments = function.get("arguments")
        if isinstance(arguments, Mapping):
            call.arguments = json.dumps(arguments)
        elif isinstance(arguments, str):
            call.arguments += arguments
        if call.name and not call.announced:
            call.announced = True
            call.id = call.id or f"call_{len(self._calls)}"
            yield model.ToolCallBegin(call.id, call.name)

    def _slot(self, index: int | None, call_id: str, name: str) -> _Call:
        """The call a fragment continues, or a new one."""
        if call_id:
            for call in self._calls:
                if call.id == call_id:
                    return call
        same = [c for c in self._calls if index is None or c.index == index]
        last = same[-1] if same else None
        if (
            last is None
            or (call_id and last.id and last.id != call_id)
            or (name and last.name and last.name != name)
        ):
            last = _Call(index)
            self._calls.append(last)
        return last


def openai_usage(
    usage: Mapping[str, Any] | None,
    *,
    prompt: str = "prompt_tokens",
    completion: str = "completion_tokens",
) -> model.Usage:
    """OpenAI counts cached tokens inside the prompt count; ours are separate. The
    Responses API names the fields input_tokens/output_tokens."""
    usage = usage or {}
    cached = (usage.get(f"{prompt}_details") or {}).get("cached_tokens") or 0
    return model.Usage(
        input_tokens=(usage.get(prompt) or 0) - cached,
        output_tokens=usage.get(completion) or 0,
        cache_read_tokens=cached,
    )
