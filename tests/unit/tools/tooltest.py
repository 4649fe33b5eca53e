# ruff: noqa: ASYNC110 -- polls a real process that is not ours to wait for
"""Test helpers for the tool tests (imported by conftest and the test modules)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from loopd.engine.ports import Declaration, ToolResult
from loopd.protocol.events import TextBlock, ToolContent


class GatedClock:
    """Every sleep (a timeout, a grace period) waits until the test calls `open()`;
    after that, sleeps return at once. So time only passes when a test says so."""

    def __init__(self) -> None:
        self._gate = asyncio.Event()
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await self._gate.wait()

    def open(self) -> None:
        self._gate.set()


@dataclass
class RecordingProgress:
    calls: list[tuple[ToolContent, ...]] = field(default_factory=list)
    seen: asyncio.Event = field(default_factory=asyncio.Event)
    wanted: str | None = None

    async def __call__(self, content: tuple[ToolContent, ...]) -> None:
        self.calls.append(content)
        if self.wanted is not None and self.wanted in self.last_text:
            self.seen.set()

    @property
    def last_text(self) -> str:
        block = self.calls[-1][0] if self.calls else TextBlock("")
        assert isinstance(block, TextBlock)
        return block.text


@dataclass(frozen=True)
class Outcome:
    declaration: Declaration
    result: ToolResult


Call = Callable[..., Awaitable[Outcome]]


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (an orphan killed in a container
    may stay a zombie when nothing reaps it, but it runs no more)."""
    if not Path("/proc/self/stat").exists():  # no procfs: ask the kernel directly
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def dies(pid: int, bound: float = 5.0) -> bool:
    """Whether `pid` is gone within `bound` seconds. A signal is delivered
    asynchronously, so a process that is not our child can outlive the kill() call
    by a moment; this polls in steps of a few milliseconds."""
    async with asyncio.timeout(bound):
        while alive(pid):
            await asyncio.sleep(0.002)
    return True
