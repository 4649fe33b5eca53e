"""In-process test doubles for the engine's ports, shipped so every layer's tests (and
other people's runtimes) can use the same ones.

- `FakeClock`: virtual time; `sleep` advances it and yields once.
- `RecordingEmitter`: keeps every event, and its wire JSON.
- `MemoryJournal`: keeps every appended message.
- `ScriptedProvider`: replays scripted replies as a provider stream; a reply can hold
  until released, so a test can cancel mid-stream.
- `ScriptedApprover`: answers approvals from a queue, or holds them open.
- `ScriptedPolicy`: verdicts by tool name, and records what it was told to remember.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopd.engine.ports import (
    Declaration,
    PolicyDecision,
    ToolCall,
    ToolProgress,
    ToolResult,
    Verdict,
)
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.errors import ProviderError, ToolInputError
from loopd.protocol.events import AgentMessageChunk, SessionEvent
from loopd.protocol.events_wire import to_wire
from loopd.protocol.messages import Message, TextPart, ThinkingPart, ToolUsePart
from loopd.protocol.model import (
    ModelRequest,
    ModelStop,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallBegin,
    ToolSpec,
    Usage,
)


@dataclass(slots=True)
class FakeClock:
    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


@dataclass(slots=True)
class RecordingEmitter:
    events: list[SessionEvent] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def emit(self, event: SessionEvent) -> None:
        self.events.append(event)
        self._changed.set()

    async def wait_for(self, seen: Callable[[list[SessionEvent]], bool]) -> None:
        """Until `seen(events)` holds; bound it with `asyncio.timeout`."""
        while not seen(self.events):
            self._changed.clear()
            await self._changed.wait()

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, AgentMessageChunk))

    @property
    def wire(self) -> list[dict[str, Any]]:
        return [to_wire(e) for e in self.events]

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


@dataclass(slots=True)
class MemoryJournal:
    messages: list[Message] = field(default_factory=list)

    async def append(self, message: Message) -> None:
        self.messages.append(message)


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted model reply. `tools` are (id, name, input) triples."""

    text: str = ""
    thinking: str = ""
    tools: Sequence[tuple[str, str, Mapping[str, Any]]] = ()
    stop: ModelStop | None = None
    usage: Usage = field(default_factory=lambda: Usage(input_tokens=10, output_tokens=5))
    error: ProviderError | None = None  # raised after the text streamed
    hold: asyncio.Event | None = None  # wait for this before finishing

    def events(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        parts: list[Any] = []
        if self.thinking:
            out.append(ThinkingDelta(self.thinking))
            parts.append(ThinkingPart(self.thinking, signature="sig"))
        if self.text:
            out.extend(TextDelta(w) for w in _words(self.text))
            parts.append(TextPart(self.text))
        for id_, name, input_ in self.tools:
            out.append(ToolCallBegin(id_, name))
            parts.append(ToolUsePart(id_, name, dict(input_)))
        stop: ModelStop = self.stop or ("tool_use" if self.tools else "end_turn")
        out.append(ResponseDone(tuple(parts), stop, self.usage))
        return out


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


@dataclass(slots=True)
class ScriptedProvider:
    """Replays `Reply`s in order, recording every request."""

    replies: deque[Reply | ProviderError] = field(default_factory=deque)
    requests: list[ModelRequest] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    def of(cls, *replies: Reply | ProviderError) -> ScriptedProvider:
        return cls(deque(replies))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError("ScriptedProvider: no reply scripted for this request")
        reply = self.replies.popleft()
        if isinstance(reply, ProviderError):
            raise reply
        events = reply.events()
        for event in events[:-1]:
            yield event
        self.started.set()
        if reply.error is not None:
            raise reply.error
        if reply.hold is not None:
            await reply.hold.wait()
        yield events[-1]


@dataclass(slots=True)
class ScriptedApprover:
    """Answers from `answers` in order. With none left it answers `when_out`, or, when
    that is None, waits forever like a person who never clicks."""

    answers: deque[ApprovalDecision] = field(default_factory=deque)
    when_out: ApprovalDecision | None = None
    requests: list[ApprovalRequest] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    def of(
        cls, *answers: ApprovalDecision, when_out: ApprovalDecision | None = None
    ) -> ScriptedApprover:
        return cls(deque(answers), when_out)

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        self.asked.set()
        if self.answers:
            return self.answers.popleft()
        if self.when_out is not None:
            return self.when_out
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


@dataclass(slots=True)
class ScriptedPolicy:
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    default: Verdict = Verdict.ALLOW
    remembered: list[tuple[str, ApprovalDecision]] = field(default_factory=list)

    def decide(self, call: ToolCall, declaration: Declaration) -> PolicyDecision:
        return PolicyDecision(self.verdicts.get(call.name, self.default), f"{call.name} policy")

    def remember(
        self, call: ToolCall, declaration: Declaration, decision: ApprovalDecision
    ) -> None:
        self.remembered.append((call.name, decision))


@dataclass(slots=True)
class FakeToolBox:
    """Three tools that only pretend: `read` (reads `path`), `write` (writes `path`),
    `bash` (runs `command`). Each run answers "<name> ok" and records its start; a run
    waits on `hold` when set, so a test can cancel during a tool. `peak` is the most
    runs seen at once, which is how tests observe parallelism."""

    hold: asyncio.Event | None = None
    fail: frozenset[str] = frozenset()
    started: list[str] = field(default_factory=list)
    running: asyncio.Event = field(default_factory=asyncio.Event)
    peak: int = 0
    _active: int = 0

    def specs(self) -> Sequence[ToolSpec]:
        return tuple(
            ToolSpec(name, f"fake {name}", {"type": "object"}) for name in ("read", "write", "bash")
        )

    async def declare(self, call: ToolCall) -> Declaration:
        match call.name:
            case "read":
                return Declaration(
                    f"Read {call.input['path']}", "read", reads=(call.input["path"],)
                )
            case "write":
                path = call.input["path"]
                return Declaration(f"Write {path}", "edit", writes=(path,))
            case "bash":
                command = call.input["command"]
                return Declaration(f"Run `{command}`", "execute", command=command)
        raise ToolInputError(f"unknown tool {call.name!r}")

    async def run(self, call: ToolCall, progress: ToolProgress) -> ToolResult:
        self.started.append(call.id)
        self._active += 1
        self.peak = max(self.peak, self._active)
        self.running.set()
        try:
            await asyncio.sleep(0)
            if self.hold is not None:
                await self.hold.wait()
            if call.name in self.fail:
                return ToolResult(f"{call.name} failed", is_error=True)
            return ToolResult(f"{call.name} ok")
        finally:
            self._active -= 1
