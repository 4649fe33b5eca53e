"""One model request, streamed to the screen, retried when the failure is transient.

Retry policy (after the vendor SDKs, through the injected clock): retry 429, 529,
5xx, resets and incomplete streams; wait `retry_after` when the server said so,
otherwise `min(0.5 * 2**n, 8)` seconds less up to 25% jitter. A stream that already
showed content is retried too, but never silently: the person is told the reply was
interrupted and is being requested again, because the screen already shows words the
model may not repeat.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from loopd.engine.ports import Clock, Emitter, Provider
from loopd.protocol.errors import IncompleteStream, ProviderError
from loopd.protocol.events import AgentMessageChunk, AgentThoughtChunk
from loopd.protocol.model import (
    ModelRequest,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallBegin,
)

IdSource = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 4
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

    async def request(self, request: ModelRequest) -> ResponseDone:
        """Stream one reply, retrying transient failures. Raises the last
        `ProviderError` when it is not retryable or retries are exhausted."""
        attempt = 0
        while True:
            shown = _Shown()
            try:
                return await self._stream_once(request, shown)
            except ProviderError as err:
                if not err.retryable or attempt >= self.retry.max_retries:
                    raise
                if shown.anything:
                    await self.emitter.emit(
                        AgentMessageChunk(
                            f"\n\n[The model's reply was interrupted ({err.message}); "
                            "asking again.]\n\n",
                            self.new_id("msg"),
                            "retry",
                        )
                    )
                await self.clock.sleep(self.retry.delay(attempt, err, self.jitter()))
                attempt += 1

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
                    shown.anything = True
                case ResponseDone() | BaseException() | None:
                    await self._flush(text, thought, text_id, thought_id, shown)
                    if isinstance(item, BaseException):
                        raise item
                    if item is None:
                        raise IncompleteStream("the provider ended its stream without a reply")
                    return item
        await self._flush(text, thought, text_id, thought_id, shown)
        return None

    async def _flush(
        self, text: list[str], thought: list[str], text_id: str, thought_id: str, shown: _Shown
    ) -> None:
        if thought and (joined := "".join(thought)):
            shown.anything = True
            await self.emitter.emit(AgentThoughtChunk(joined, thought_id))
        if text and (joined := "".join(text)):
            shown.anything = True
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
    anything: bool = False
