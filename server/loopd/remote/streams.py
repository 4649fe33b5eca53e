"""One SSE stream's messages, numbered, kept for a client that comes back.

Every message the server sends on a stream gets the next number as its SSE `id`.
A client whose stream dropped opens it again with `Last-Event-ID: N` and gets what
followed N, once and in order: nothing the daemon sent while it was away is lost,
nothing it already had is repeated. A stream keeps its last `LIMIT` bytes; a client
asking from before them is told the stream is `Gone` (it then loads the session
afresh). One reader at a time: a new one ends the one before (a reconnecting
client's old TCP connection may not have noticed it is dead).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

LIMIT = 32 * 1024 * 1024
KEEPALIVE = 15.0  # seconds of quiet before a comment line (as the SDK and TS reference)


class Gone(Exception):
    """What the client asks to resume from is no longer kept."""


class Log:
    """A stream's numbered messages (see the module docstring)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._events: deque[tuple[int, str]] = deque()
        self._held = 0
        self._limit = limit
        self._last = 0  # the number of the newest message
        self._changed = asyncio.Event()
        self._reader = 0  # which reader is current (a new one ends the others)
        self.closed = False

    @property
    def last(self) -> int:
        return self._last

    def push(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        self._last += 1
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        self._events.append((self._last, data))
        self._held += len(data)
        while self._held > self._limit and len(self._events) > 1:
            self._held -= len(self._events.popleft()[1])
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def check(self, after: int) -> None:
        """Raise `Gone` when what follows message `after` is not all kept."""
        first = self._events[0][0] if self._events else self._last + 1
        if after > self._last or after < first - 1:
            raise Gone(f"message {after} is not kept (kept: {first - 1}..{self._last})")

    async def follow(self, after: int) -> AsyncIterator[tuple[int, str] | None]:
        """The messages after `after` (number, JSON text), then each new one, until
        the log closes or another reader takes over; None after a quiet while (the
        reader sends a keepalive)."""
        self.check(after)
        self._reader += 1
        me = self._reader
        self._wake()  # the reader before this one ends
        while me == self._reader:
            if after < self._last:
                self.check(after)  # the client was slower than the log is long
                first = self._events[0][0]
                event = self._events[after + 1 - first]
                after = event[0]
                yield event
                continue
            if self.closed:
                return
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), KEEPALIVE)
            except TimeoutError:
                yield None

    def _wake(self) -> None:
        self._changed.set()


def sse(event: tuple[int, str] | None) -> bytes:
    """An SSE frame of a `follow` item: the message with its number as `id`, or a
    keepalive comment."""
    if event is None:
        return b": keepalive\n\n"
    return f"id: {event[0]}\ndata: {event[1]}\n\n".encode()
