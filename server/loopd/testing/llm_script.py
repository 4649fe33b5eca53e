"""What a `FakeLLMServer` is told to answer: format-agnostic script steps.

A step says *what* the model replies (text, thinking, tool calls, why it stopped)
and *how* it is delivered (chunking, pings, unknown events, a fault); the server
renders it in whichever wire format the request's route speaks, so one script can
drive any provider; a responder computes the step from the `RecordedRequest`.
Three kinds of step:

- `Reply`: a streamed answer, optionally with a delivery fault.
- `HttpError`: an error status with the format's JSON error body.
- `RawStream`: SSE events sent verbatim, for wire quirks no `Reply` describes.

`steps_from_json` reads the JSON form documented in `loopd.testing.fake_llm`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from loopd.protocol.model import ModelStop


@dataclass(slots=True)
class RecordedRequest:
    """One request the server received, as a responder and the test see it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    size: int = 0
    """The body's length in bytes, as sent."""
    disconnected: bool = False
    """The client closed the connection before the reply was fully written."""


ErrorKind = Literal[
    "rate_limited", "overloaded", "server_error", "context_overflow", "auth", "bad_request"
]


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """A tool call the fake model makes. `raw_arguments`, when set, is streamed
    instead of `input` (to send arguments that do not parse). An empty `id` gets a
    format-style one (`toolu_fake_0`, `call_fake_0`)."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""
    raw_arguments: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A streamed reply and how to deliver it.

    Content: `text` and `thinking` stream as word-sized deltas; `signature` is the
    Anthropic thinking signature (the Responses `encrypted_content`); `stop`
    defaults to `tool_use` when there are tool calls, else `end_turn`.

    Delivery: `chunk` writes N bytes at a time (0: whole events); `pings` adds
    keep-alives; `unknown_events` adds event, block and delta types no client
    knows; `fail` ends the stream with an error event of that kind instead of the
    terminal event; `drop_after` closes the connection after N events. After
    `pause_after` events (0: right after the headers) the server waits for
    `FakeLLMServer.release(gate)` when `gate` is set, then `stall` seconds.
    """

    text: str = ""
    thinking: str = ""
    signature: str = "fake-signature"
    tool_calls: tuple[ScriptedCall, ...] = ()
    stop: ModelStop | None = None
    input_tokens: int = 12
    output_tokens: int = 7
    cached_tokens: int = 0
    chunk: int = 0
    pings: bool = False
    unknown_events: bool = False
    fail: ErrorKind | None = None
    drop_after: int | None = None
    pause_after: int = 0
    gate: str = ""
    stall: float = 0.0

    @property
    def stop_reason(self) -> ModelStop:
        return self.stop or ("tool_use" if self.tool_calls else "end_turn")


@dataclass(frozen=True, slots=True)
class HttpError:
    """An error response. `status` defaults per kind and format (429, 529 or 503,
    500, 400, 401, 400); `retry_after` and `retry_after_ms` become headers."""

    kind: ErrorKind
    status: int | None = None
    retry_after: float | None = None
    retry_after_ms: int | None = None
    message: str = ""


@dataclass(frozen=True, slots=True)
class RawStream:
    """SSE events sent as given: `(event name or None, data)`, data a JSON-able
    object or a literal string such as `[DONE]`."""

    events: tuple[tuple[str | None, Any], ...]
    chunk: int = 0


Step = Reply | HttpError | RawStream


def steps_from_json(items: Sequence[Mapping[str, Any]]) -> list[Step]:
    return [step_from_json(item) for item in items]


def step_from_json(item: Mapping[str, Any]) -> Step:
    data = dict(item)
    if "error" in data:
        data["kind"] = data.pop("error")
        return HttpError(**_checked(HttpError, data))
    if "raw" in data:
        data["events"] = tuple((e, d) for e, d in data.pop("raw"))
        return RawStream(**_checked(RawStream, data))
    calls = data.pop("tool_calls", ())
    data["tool_calls"] = tuple(ScriptedCall(**_checked(ScriptedCall, c)) for c in calls)
    return Reply(**_checked(Reply, data))


def _checked(cls: type[Any], data: Mapping[str, Any]) -> Mapping[str, Any]:
    """`data`, once every key is a field of `cls`: a typo in a script fails loudly."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown fields {unknown}; known: {sorted(known)}")
    return data
