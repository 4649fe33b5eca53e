"""Steering: what the person says while a turn runs, read by that turn at its next
step (seed 000 `Config.Steer`, seed 002 `LoopControl`).

The session owns the box (it outlives the engine, which `/clear` rebuilds); the
engine drains it at the top of every round and, while the model streams, waits on
it too: a reply being generated is interrupted, so the new words are read now and
not after the model has finished a paragraph they make moot. Running tools are not
interrupted: their effects are real and half of one is worse than a late answer.

The box is open only while a turn runs. A push to a closed box is refused, so the
caller can send the text as a prompt instead; text that arrives in the instant a
turn ends is kept and read with the next turn, never dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass(eq=False)
class SteerBox:
    _pending: list[str] = field(default_factory=list)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    running: bool = False

    def push(self, text: str) -> bool:
        """Hand over `text` for the running turn. False when no turn runs."""
        if not self.running:
            return False
        self._pending.append(text)
        self._arrived.set()
        return True

    def pending(self) -> bool:
        return bool(self._pending)

    def take(self) -> str:
        """Everything said since the last take, oldest first, or ""."""
        said = "\n\n".join(self._pending)
        self._pending.clear()
        self._arrived.clear()
        return said

    async def wait(self) -> None:
        """Until something is pushed (at once if something is pending)."""
        await self._arrived.wait()

    def begin(self) -> None:
        self.running = True

    def end(self) -> str:
        """The turn is over: close the box; what arrived too late to be read."""
        self.running = False
        return self.take()


STEER_PREFIX = "[The user, while you were working:]"


def steer_text(said: str) -> str:
    """How steering reads in the history: the person's words, marked as said
    mid-turn so the model weighs them against the work in progress."""
    return f"{STEER_PREFIX}\n{said}"


async def unless_steered(work: Awaitable[T], box: SteerBox) -> T | None:
    """`work`'s result, or None when the person said something first (then `work`
    is cancelled and waited for). Cancelling the caller cancels `work` too."""
    task = asyncio.ensure_future(work)
    wake = asyncio.ensure_future(box.wait())
    try:
        await asyncio.wait({task, wake}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait({task})
        raise
    finally:
        wake.cancel()
    if task.done():
        return task.result()
    task.cancel()
    await asyncio.wait({task})
    return None
