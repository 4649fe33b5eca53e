"""One model request, streamed to the screen, retried when the failure is transient.

Retry policy (after the vendor SDKs, through the injected clock): retry 429, 529,
5xx, resets and incomplete streams; wait `retry_after` when the server said so,
otherwise `min(0.5 * 2**n, 8)` seconds less up to 25% jitter. A stream that already
showed content is retried too, but never silently: the person is told the reply was
interrupted and is being requested again, because the screen already shows words the
model may not repeat.

A stall (no data for the idle timeout) is retried at most `max_stall_retries` times,
and always said, even before any text came: each attempt cost the whole timeout in
silence. Once a reply was cut off after showing text, later attempts are shown only
when complete: a retry that is cut off too shows nothing, so the person sees the
partial text once and the whole answer once, never the same start five times.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from loopd.engine.ports import Clock, Emitter, Provider
from loopd.protocol.errors import IncompleteStream, ProviderError, StreamStalled
from loopd.protocol.events import AgentMessageChunk, AgentThoughtChunk, SessionEvent
from loopd.protocol.model import (
    ModelRequest,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallBegin,
)

IdSource = Callable[[str], str]


class _Nobody:
    async def emit(self, event: SessionEvent) -> None:
        return None


NOBODY: Emitter = _Nobody()
"""An emitter no one hears: for requests the person is not shown (a summary)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 4
    max_stall_retries: int = 1
    base_delay: float = 0.5
    max_delay: float = 8.0

    def delay(self, attempt: int, error: ProviderError, jitter: float) -> float:
        if error.retry_after is not None:
            return max(0.0, error.retry_after)
        backoff = min(self.base_delay * 2.0**attempt, self.max_delay)
        return backoff * (1 - 0.25 * jitter)


@dataclass(slots=True)
class ReplyStreamer:
    provider: Provider
    emitter: Emitter
    clock: Clock
    new_id: IdSource
    jitter: Callable[[], float]
    retry: RetryPolicy
    show_reasoning: bool = True
    said: list[str] = field(default_factory=list)  # the text shown so far

    async def request(self, request: ModelRequest) -> ResponseDone:
        """Stream one reply, retrying transient failures. Raises the last
        `ProviderError` when it is not retryable or retries are exhausted."""
        attempt = stalls = 0
        held = False
        while True:
            shown = _Shown(held=held)
            try:
                return await self._stream_once(request, shown)
            except ProviderError as err:
                stalls += isinstance(err, StreamStalled)
                if (
                    not err.retryable
                    or attempt >= self.retry.max_retries
                    or stalls > self.retry.max_stall_retries
                ):
                    raise
                cut = shown.anything or bool(shown.text or shown.thought)
                note = self._retry_note(err, cut, attempt, stalls)
                if note:
                    await self.emitter.emit(AgentMessageChunk(note, self.new_id("msg"), "retry"))
                held = held or shown.anything
                await self.clock.sleep(self.retry.delay(attempt, err, self.jitter()))
                attempt += 1

    def _retry_note(self, err: ProviderError, cut: bool, attempt: int, stalls: int) -> str:
        """What the person is told before a retry; nothing for a quick retry of a
        reply that had not started (the backoff is short and nothing is lost)."""
        if isinstance(err, StreamStalled):
            return (
                f"\n\n[The model stream stalled: no data for {err.idle_seconds:g} s. "
                f"Asking again (retry {stalls} of {self.retry.max_stall_retries} after a "
                "stall).]\n\n"
            )
        if cut:
            return (
                f"\n\n[The model's reply was interrupted ({err.message}); asking again "
                f"(retry {attempt + 1} of {self.retry.max_retries}).]\n\n"
            )
        return ""

    async def _stream_once(self, request: ModelRequest, shown: _Shown) -> ResponseDone:
        """Show the reply as it streams. Deltas that have already arrived together are
        shown as one chunk: a reader task fills a queue and the writer drains all it
        holds at each wake-up. A slow model is shown token by token; a fast one (or a
        burst after a stall) costs one update per burst instead of one per token,
        for the journal and for every editor watching."""
        inbox = _Inbox()
        reader = asyncio.create_task(_read_into(self.provider.stream(request), inbox))
        text_id, thought_id = self.new_id("msg"), self.new_id("msg")
        try:
            while True:
                batch = await inbox.take_all()
                done = await self._show(batch, text_id, thought_id, shown)
                if done is not None:
                    return done
        finally:
            reader.cancel()

    async def _show(
        self,
        batch: list[Inbound],
        text_id: str,
        thought_id: str,
        shown: _Shown,
    ) -> ResponseDone | None:
        text: list[str] = []
        thought: list[str] = []
        for item in batch:
            match item:
                case TextDelta(delta):
                    text.append(delta)
                case ThinkingDelta(delta):
                    if self.show_reasoning:
                        thought.append(delta)
                case ToolCallBegin():
                    shown.anything = shown.anything or not shown.held
                case ResponseDone() | BaseException() | None:
                    final = isinstance(item, ResponseDone)
                    await self._flush(text, thought, text_id, thought_id, shown, final)
                    if isinstance(item, BaseException):
                        raise item
                    if item is None:
                        raise IncompleteStream("the provider ended its stream without a reply")
                    return item
        await self._flush(text, thought, text_id, thought_id, shown)
        return None

    async def _flush(
        self,
        text: list[str],
        thought: list[str],
        text_id: str,
        thought_id: str,
        shown: _Shown,
        final: bool = False,
    ) -> None:
        if shown.held and not final:  # shown only once the reply is complete
            shown.text += text
            shown.thought += thought
            text.clear()
            thought.clear()
            return
        text[:0], thought[:0] = shown.text, shown.thought
        if thought and (joined := "".join(thought)):
            shown.anything = True
            await self.emitter.emit(AgentThoughtChunk(joined, thought_id))
        if text and (joined := "".join(text)):
            shown.anything = True
            self.said.append(joined)
            await self.emitter.emit(AgentMessageChunk(joined, text_id))
        text.clear()
        thought.clear()


Inbound = StreamEvent | BaseException | None


@dataclass(slots=True)
class _Inbox:
    """What the reader has received and the writer not yet shown. Cheaper than an
    asyncio.Queue on the hot path: an append, and a wake-up only when one is due."""

    items: deque[Inbound] = field(default_factory=deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def put(self, item: Inbound) -> None:
        self.items.append(item)
        self.ready.set()

    async def take_all(self) -> list[Inbound]:
        while not self.items:
            self.ready.clear()
            await self.ready.wait()
        batch = list(self.items)
        self.items.clear()
        return batch


async def _read_into(stream: AsyncIterator[StreamEvent], inbox: _Inbox) -> None:
    """Move a provider stream into `inbox`; end with None, or with the error raised."""
    try:
        async for event in stream:
            inbox.put(event)
    except Exception as err:
        inbox.put(err)
        return
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    inbox.put(None)


@dataclass(slots=True)
class _Shown:
    """What one attempt showed. `held`: the attempt is a retry after a reply that was
    cut off, so its deltas wait in `text`/`thought` until it completes."""

    held: bool = False
    anything: bool = False
    text: list[str] = field(default_factory=list)
    thought: list[str] = field(default_factory=list)
