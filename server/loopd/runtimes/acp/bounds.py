"""How far a child ACP agent may go, and the reader that holds it to the longest
message.

A child is bounded like everything else loopd runs, because it is as untrusted as
the model: what it sends in one turn is journaled and relayed to the editor, so
the bytes of its updates have a budget (`update_bytes`, then the turn is stopped
and the rest dropped); one message may not outgrow `message_bytes` (the child is
stopped: a line is never held whole past it, and a line too long for the SDK's
reader used to stall the turn for good); and a turn it keeps after `session/cancel`
is taken from it after `cancel_grace` seconds (the child is killed; the next turn
starts it again, loading its session when it can).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopd.protocol.turns import StopReason


@dataclass(frozen=True, slots=True)
class ChildBounds:
    update_bytes: int = 8 << 20  # of one turn's updates, as JSON
    message_bytes: int = 16 << 20  # of one line the child writes (a file it writes, too)
    cancel_grace: float = 5.0  # seconds a cancelled turn may take to end


@dataclass(slots=True)
class TurnBounds:
    """One turn's account: what its updates spent, and why loopd stopped it (None:
    it did not)."""

    budget: int
    spent: int = 0
    stopped: StopReason | None = None

    def take(self, size: int) -> bool:
        """Whether an update of `size` bytes fits what is left."""
        self.spent += size
        return self.spent <= self.budget


READ_CHUNK = 1 << 20  # what the reader under this one holds of a line at a time


class BoundedReader(asyncio.StreamReader):
    """What the ACP SDK reads the child's stdout through: a StreamReader by type
    (the SDK checks), whose `readuntil` and `readexactly` (all the SDK calls) read
    `inner`, in lines of at most `cap` bytes. A longer one is not read on:
    `too_long(size)` is told (it stops the child) and the SDK sees the end of the
    stream, so it fails what it was waiting for instead of waiting forever."""

    def __init__(
        self, inner: asyncio.StreamReader, cap: int, too_long: Callable[[int], None]
    ) -> None:
        super().__init__()
        self._inner, self._cap, self._too_long = inner, cap, too_long

    async def readuntil(self, separator: Any = b"\n") -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await self._inner.readuntil(separator)
                done = True
            except asyncio.LimitOverrunError as err:
                chunk = await self._inner.readexactly(err.consumed)
                done = False
            size += len(chunk)
            if size > self._cap:
                self._too_long(size)
                raise asyncio.IncompleteReadError(b"", None)
            chunks.append(chunk)
            if done:
                return b"".join(chunks)

    async def readexactly(self, n: int) -> bytes:
        return await self._inner.readexactly(n)
