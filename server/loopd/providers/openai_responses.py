"""OpenAI Responses API, streamed (`POST {base}/responses`).

Stateless on purpose: every request carries the whole history with `store: false`,
never `previous_response_id`, so a session survives a restart and can move between
providers. Reasoning is kept as a ThinkingPart whose `signature` is the item's
`encrypted_content`, and only such signed reasoning is sent back. Following Codex,
only `response.output_item.done` items are final (deltas are for the screen), the
stream must end in `response.completed` or `response.incomplete`, and
`response.failed` is classified by its code (`context_length_exceeded` is an
overflow, not a retry).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from loopd.protocol import messages, model
from loopd.protocol.errors import Transient
from loopd.providers.body import dumps, elements, encode_object, join_array
from loopd.providers.classify import error_from_payload
from loopd.providers.openai_chat import Format, OpenAIEncoder, OpenAIProvider, openai_usage
from loopd.providers.sse import (
    JsonObject,
    data_url,
    incomplete,
    load_event,
    parse_tool_input,
)

PATH = "/responses"
_THINKING_EVENTS = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)
_INCOMPLETE: Mapping[str, model.ModelStop] = {"content_filter": "refusal"}


class OpenAIResponsesProvider(OpenAIProvider):
    """Streams replies from the Responses API."""

    def format(self) -> Format:
        return PATH, RequestEncoder(), _Decoder


# ---- request ----


class RequestEncoder(OpenAIEncoder):
    """Responses bodies: stateless (`store: false`), the system prompt as `instructions`."""

    def __init__(self) -> None:
        super().__init__(_message, _tools)

    def encode(self, request: model.ModelRequest) -> bytes:
        body: JsonObject = {
            "model": request.model,
            "input": join_array(self._history.fragments(request.messages)),
            "stream": True,
            "store": False,
            "max_output_tokens": request.max_tokens,
        }
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = self._tools(request.tools)
        if request.thinking != "off":
            body["reasoning"] = {"effort": request.thinking, "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        return encode_object(body)


def _tools(specs: tuple[model.ToolSpec, ...]) -> bytes:
    return dumps(
        [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.input_schema),
                "strict": False,
            }
            for t in specs
        ]
    )


def _message(message: messages.Message) -> bytes:
    return elements(_items(message))


def _items(message: messages.Message) -> Iterator[JsonObject]:
    """Input items in the message's order; consecutive text and images share one
    message item."""
    role = message.role
    content: list[JsonObject] = []
    for part in message.parts:
        item = _item(part)
        if item is None:
            content.extend(_content(role, part))
            continue
        if content:
            yield {"role": role, "content": content}
            content = []
        yield item
    if content:
        yield {"role": role, "content": content}


def _item(part: messages.Part) -> JsonObject | None:
    match part:
        case messages.ToolUsePart(id_, name, input_):
            arguments = json.dumps(dict(input_))
            return {"type": "function_call", "call_id": id_, "name": name, "arguments": arguments}
        case messages.ToolResultPart(tool_use_id, content, _, images):
            shown = [{"type": "input_text", "text": content}, *(_input_image(i) for i in images)]
            output = shown if images else content
            return {"type": "function_call_output", "call_id": tool_use_id, "output": output}
        case messages.ThinkingPart(text, signature, _) if signature:
            summary = [{"type": "summary_text", "text": text}] if text else []
            return {"type": "reasoning", "summary": summary, "encrypted_content": signature}
    return None


def _content(role: str, part: messages.Part) -> list[JsonObject]:
    if isinstance(part, messages.TextPart) and part.text:
        kind = "output_text" if role == "assistant" else "input_text"
        return [{"type": kind, "text": part.text}]
    if isinstance(part, messages.ImagePart):
        return [_input_image(part)]
    return []  # unsigned thinking: nothing the API would accept


def _input_image(part: messages.ImagePart) -> JsonObject:
    return {"type": "input_image", "image_url": data_url(part.media_type, part.data)}


# ---- response ----


class _Decoder:
    def __init__(self) -> None:
        self._items: dict[int, Mapping[str, Any]] = {}
        self._final: Mapping[str, Any] | None = None

    @property
    def done(self) -> bool:
        return self._final is not None

    def feed(self, event: str, data: str) -> Iterator[model.StreamEvent]:
        payload = load_event(data)
        if payload is None:
            return
        kind = payload.get("type", event)
        if kind in _THINKING_EVENTS:
            yield model.ThinkingDelta(payload.get("delta", ""))
        match kind:
            case "response.output_text.delta":
                yield model.TextDelta(payload.get("delta", ""))
            case "response.output_item.added":
                item = payload.get("item") or {}
                if item.get("type") == "function_call":
                    yield model.ToolCallBegin(item.get("call_id", ""), item.get("name", ""))
            case "response.output_item.done":
                self._items[payload.get("output_index", len(self._items))] = payload["item"]
            case "response.completed" | "response.incomplete":
                self._final = payload.get("response") or {}
            case "response.failed":
                error = (payload.get("response") or {}).get("error")
                raise error_from_payload(error) if error else Transient("response.failed")
            case "error":
                raise error_from_payload(payload)

    def finish(self) -> model.ResponseDone:
        if self._final is None:
            raise incomplete("response.completed")
        items = [item for _, item in sorted(self._items.items())]
        parts = [p for item in items or self._final.get("output") or () for p in _parts(item)]
        return model.ResponseDone(
            tuple(parts),
            self._stop(parts),
            openai_usage(
                self._final.get("usage"), prompt="input_tokens", completion="output_tokens"
            ),
        )

    def _stop(self, parts: list[messages.Part]) -> model.ModelStop:
        if any(isinstance(p, messages.ToolUsePart) for p in parts):
            return "tool_use"
        if self._final and self._final.get("status") == "incomplete":
            reason = (self._final.get("incomplete_details") or {}).get("reason", "")
            return _INCOMPLETE.get(reason, "max_tokens")
        return "end_turn"


def _parts(item: Mapping[str, Any]) -> Iterator[messages.Part]:
    match item.get("type"):
        case "message":
            text = "".join(
                c.get("text") or c.get("refusal") or "" for c in item.get("content") or ()
            )
            if text:
                yield messages.TextPart(text)
        case "function_call":
            arguments = item.get("arguments") or ""
            yield messages.ToolUsePart(
                item.get("call_id", ""), item.get("name", ""), parse_tool_input(arguments)
            )
        case "reasoning":
            texts = [s.get("text", "") for s in item.get("summary") or ()]
            texts += [c.get("text", "") for c in item.get("content") or ()]
            yield messages.ThinkingPart(
                "\n\n".join(texts), signature=item.get("encrypted_content") or ""
            )
