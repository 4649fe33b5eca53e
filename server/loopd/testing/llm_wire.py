"""Script steps rendered as the exact bytes of each wire format.

Each `*Wire` class renders one `Reply` as a list of SSE event texts in the order
the real service sends them (checked against the official SDKs in the tests), and
knows its format's error body. Pings, unknown events and mid-stream failures are
placed where the real services put them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from loopd.testing.llm_errors import ERRORS
from loopd.testing.llm_script import ErrorKind, Reply, ScriptedCall

ANTHROPIC = "/v1/messages"
OPENAI_CHAT = "/v1/chat/completions"
OPENAI_RESPONSES = "/v1/responses"
CREATED = 1764400000


def sse(event: str | None, data: Any) -> str:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


def pieces(text: str) -> list[str]:
    """Word-sized deltas, the way models stream."""
    return re.findall(r"\S+\s*|\s+", text)


def thirds(text: str) -> list[str]:
    step = max(1, len(text) // 3)
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


def arguments(call: ScriptedCall) -> str:
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.input)


class Wire:
    """Renders one reply; subclasses fill in the format."""

    route: ClassVar[str]
    ping: ClassVar[str] = ": ping\n\n"

    def __init__(self, model: str) -> None:
        self.model = model

    def render(self, reply: Reply) -> list[str]:
        frames = self.head(reply) + self.content(reply)
        if reply.unknown_events:
            frames += self.unknown(len(reply.tool_calls) + 2)
        frames += [self.error_event(reply.fail)] if reply.fail else self.tail(reply)
        if reply.pings:
            frames = [*frames[:1], self.ping, *frames[1:-1], self.ping, frames[-1]]
        return frames

    def head(self, reply: Reply) -> list[str]:
        raise NotImplementedError

    def content(self, reply: Reply) -> list[str]:
        raise NotImplementedError

    def tail(self, reply: Reply) -> list[str]:
        raise NotImplementedError

    def unknown(self, index: int) -> list[str]:
        raise NotImplementedError

    def error_event(self, kind: ErrorKind) -> str:
        raise NotImplementedError

    @classmethod
    def error_body(cls, kind: ErrorKind, message: str) -> tuple[int, dict[str, Any]]:
        shape = ERRORS[kind]
        text = message or shape.openai_message or shape.message
        error = {
            "message": text,
            "type": shape.openai_type,
            "param": None,
            "code": shape.openai_code,
        }
        return shape.openai_status, {"error": error}


class AnthropicWire(Wire):
    route = ANTHROPIC
    ping = sse("ping", {"type": "ping"})

    def head(self, reply: Reply) -> list[str]:
        usage = {
            "input_tokens": reply.input_tokens,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": reply.cached_tokens,
        }
        message: dict[str, Any] = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        return [sse("message_start", {"type": "message_start", "message": message})]

    def content(self, reply: Reply) -> list[str]:
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if reply.thinking:
            deltas = [{"type": "thinking_delta", "thinking": t} for t in pieces(reply.thinking)]
            deltas.append({"type": "signature_delta", "signature": reply.signature})
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        if reply.text:
            deltas = [{"type": "text_delta", "text": t} for t in pieces(reply.text)]
            blocks.append(({"type": "text", "text": ""}, deltas))
        for n, call in enumerate(reply.tool_calls):
            start = {"type": "tool_use", "id": call.id or f"toolu_fake_{n}", "name": call.name}
            json_deltas = ["", *thirds(arguments(call))]
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in json_deltas]
            blocks.append(({**start, "input": {}}, deltas))
        return [frame for i, block in enumerate(blocks) for frame in self._block(i, *block)]

    @staticmethod
    def _block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> list[str]:
        head: dict[str, Any] = {
            "type": "content_block_start",
            "index": index,
            "content_block": start,
        }
        body = [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        stop = {"type": "content_block_stop", "index": index}
        return [sse(e["type"], e) for e in (head, *body, stop)]

    def tail(self, reply: Reply) -> list[str]:
        delta = {"stop_reason": reply.stop_reason, "stop_sequence": None}
        usage = {"output_tokens": reply.output_tokens}
        return [
            sse("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}),
            sse("message_stop", {"type": "message_stop"}),
        ]

    def unknown(self, index: int) -> list[str]:
        block = self._block(index, {"type": "future_block"}, [{"type": "future_delta", "x": 1}])
        return [sse("future_event", {"type": "future_event", "x": 1}), *block]

    def error_event(self, kind: ErrorKind) -> str:
        return sse("error", self.error_body(kind, "")[1])

    @classmethod
    def error_body(cls, kind: ErrorKind, message: str) -> tuple[int, dict[str, Any]]:
        shape = ERRORS[kind]
        error = {"type": shape.anthropic_type, "message": message or shape.message}
        return shape.anthropic_status, {"type": "error", "error": error, "request_id": "req_fake"}


class ChatWire(Wire):
    route = OPENAI_CHAT

    _STOPS: ClassVar[Mapping[str, str]] = {
        "end_turn": "stop",
        "tool_use": "tool_calls",
        "max_tokens": "length",
        "refusal": "content_filter",
        "pause_turn": "stop",
    }

    def chunk(self, delta: Any, finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.model,
            "choices": [choice],
            "usage": None,
            **extra,
        }
        return sse(None, body)

    def head(self, reply: Reply) -> list[str]:
        return [self.chunk({"role": "assistant", "content": ""})]

    def content(self, reply: Reply) -> list[str]:
        frames = [self.chunk({"reasoning_content": t}) for t in pieces(reply.thinking)]
        frames += [self.chunk({"content": t}) for t in pieces(reply.text)]
        for n, call in enumerate(reply.tool_calls):
            function = {"name": call.name, "arguments": ""}
            first = {"index": n, "id": call.id or f"call_fake_{n}", "type": "function"}
            frames.append(self.chunk({"tool_calls": [{**first, "function": function}]}))
            frames += [
                self.chunk({"tool_calls": [{"index": n, "function": {"arguments": p}}]})
                for p in thirds(arguments(call))
            ]
        return frames

    def tail(self, reply: Reply) -> list[str]:
        usage = {
            "prompt_tokens": reply.input_tokens + reply.cached_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.cached_tokens + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        }
        return [
            self.chunk({}, self._STOPS[reply.stop_reason]),
            self.chunk(None, choices=[], usage=usage),
            sse(None, "[DONE]"),
        ]

    def unknown(self, index: int) -> list[str]:
        return [self.chunk({"future_field": {"x": 1}}), sse(None, {"object": "future.event"})]

    def error_event(self, kind: ErrorKind) -> str:
        return sse(None, self.error_body(kind, "")[1])


class ResponsesWire(Wire):
    route = OPENAI_RESPONSES

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self._seq = 0
        self._output: list[dict[str, Any]] = []

    def event(self, kind: str, **fields: Any) -> str:
        self._seq += 1
        return sse(kind, {"type": kind, "sequence_number": self._seq, **fields})

    def response(self, status: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": "resp_fake",
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "model": self.model,
            "output": list(self._output),
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "parallel_tool_calls": True,
            "temperature": None,
            "tool_choice": "auto",
            "tools": [],
            "top_p": None,
            "usage": None,
            **fields,
        }

    def head(self, reply: Reply) -> list[str]:
        created = self.response("in_progress")
        return [
            self.event("response.created", response=created),
            self.event("response.in_progress", response=created),
        ]

    def content(self, reply: Reply) -> list[str]:
        frames = self._reasoning(reply) if reply.thinking else []
        frames += self._message(reply.text) if reply.text else []
        for n, call in enumerate(reply.tool_calls):
            frames += self._call(n, call)
        return frames

    def _item(
        self, item: dict[str, Any], body: Callable[[int], list[str]], done: dict[str, Any]
    ) -> list[str]:
        """`added`, the body rendered for this output index, then `done`, so
        sequence numbers stay in stream order."""
        index = len(self._output)
        self._output.append(done)
        added = self.event("response.output_item.added", output_index=index, item=item)
        frames = body(index)
        return [
            added,
            *frames,
            self.event("response.output_item.done", output_index=index, item=done),
        ]

    def _reasoning(self, reply: Reply) -> list[str]:
        item_id, text = "rs_fake", reply.thinking
        part = {"type": "summary_text", "text": text}

        def body(index: int) -> list[str]:
            where = {"item_id": item_id, "output_index": index, "summary_index": 0}
            return [
                self.event(
                    "response.reasoning_summary_part.added", **where, part={**part, "text": ""}
                ),
                *(
                    self.event("response.reasoning_summary_text.delta", **where, delta=t)
                    for t in pieces(text)
                ),
                self.event("response.reasoning_summary_text.done", **where, text=text),
                self.event("response.reasoning_summary_part.done", **where, part=part),
            ]

        item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
        done = {**item, "summary": [part], "encrypted_content": reply.signature}
        return self._item(item, body, done)

    def _message(self, text: str) -> list[str]:
        item_id = "msg_fake"
        part = {"type": "output_text", "text": text, "annotations": []}

        def body(index: int) -> list[str]:
            where = {"item_id": item_id, "output_index": index, "content_index": 0}
            return [
                self.event("response.content_part.added", **where, part={**part, "text": ""}),
                *(
                    self.event("response.output_text.delta", **where, delta=t, logprobs=[])
                    for t in pieces(text)
                ),
                self.event("response.output_text.done", **where, text=text, logprobs=[]),
                self.event("response.content_part.done", **where, part=part),
            ]

        item = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress"}
        done = {**item, "status": "completed", "content": [part]}
        return self._item({**item, "content": []}, body, done)

    def _call(self, n: int, call: ScriptedCall) -> list[str]:
        item_id, args = f"fc_fake_{n}", arguments(call)
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call.id or f"call_fake_{n}",
            "name": call.name,
            "arguments": "",
        }

        def body(index: int) -> list[str]:
            where = {"item_id": item_id, "output_index": index}
            return [
                *(
                    self.event("response.function_call_arguments.delta", **where, delta=p)
                    for p in thirds(args)
                ),
                self.event(
                    "response.function_call_arguments.done", **where, arguments=args, name=call.name
                ),
            ]

        return self._item(item, body, {**item, "status": "completed", "arguments": args})

    def tail(self, reply: Reply) -> list[str]:
        usage = {
            "input_tokens": reply.input_tokens + reply.cached_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.cached_tokens + reply.output_tokens,
        }
        reason = {"max_tokens": "max_output_tokens", "refusal": "content_filter"}.get(
            reply.stop_reason
        )
        if reason is None:
            done = self.response("completed", usage=usage)
            return [self.event("response.completed", response=done)]
        details = {"reason": reason}
        done = self.response("incomplete", usage=usage, incomplete_details=details)
        return [self.event("response.incomplete", response=done)]

    def unknown(self, index: int) -> list[str]:
        return [self.event("response.future_event", x=1)]

    def error_event(self, kind: ErrorKind) -> str:
        _, body = self.error_body(kind, "")
        error = {
            "code": body["error"]["code"] or body["error"]["type"],
            "message": body["error"]["message"],
        }
        return self.event("response.failed", response=self.response("failed", error=error))


WIRES: Mapping[str, type[Wire]] = {w.route: w for w in (AnthropicWire, ChatWire, ResponsesWire)}
