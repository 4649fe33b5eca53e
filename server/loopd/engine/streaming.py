"""One model request, streamed to the screen, retried when the failure is transient.

Retry policy (after the vendor SDKs, through the injected clock): retry 429, 529,
5xx, resets and incomplete streams; wait `retry_after` when the server said so,
otherwise `min(0.5 * 2**n, 8)` seconds less up to 25% jitter. A stream that already
showed content is retried too, but never silently: the person is told the reply was
interrupted and is being requested again, because the screen already shows words the
model may not repeat.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loopd.engine.ports import Clock, Emitter, Provider
from loopd.protocol.errors import IncompleteStream, ProviderError
from loopd.protocol.events import AgentMessageChunk, AgentThoughtChunk
from loopd.protocol.model import (
    ModelRequest,
    ResponseDone,
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
                        )
                    )
                await self.clock.sleep(self.retry.delay(attempt, err, self.jitter()))
                attempt += 1

    async def _stream_once(self, request: ModelRequest, shown: _Shown) -> ResponseDone:
        text_id = self.new_id("msg")
        thought_id = self.new_id("msg")
        async for event in self.provider.stream(request):
            match event:
                case TextDelta(text):
                    if text:
                        shown.anything = True
                        await self.emitter.emit(AgentMessageChunk(text, text_id))
                case ThinkingDelta(text):
                    if text and self.show_reasoning:
                        shown.anything = True
                        await self.emitter.emit(AgentThoughtChunk(text, thought_id))
                case ToolCallBegin():
                    shown.anything = True
                case ResponseDone():
                    return event
        raise IncompleteStream("the provider ended its stream without a final reply")


@dataclass(slots=True)
class _Shown:
    anything: bool = False
