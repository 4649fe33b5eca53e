"""A one-line spinner on stderr while `loopd run` waits for the model or a tool.

Only on a terminal: a log file or a pipe gets no carriage returns. The line is drawn
only when the cursor is at the start of a line (the renderer says so), so it never
overwrites half a sentence, and it is erased before anything else is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from dataclasses import dataclass, field
from typing import TextIO

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
INTERVAL = 0.1  # seconds between frames


@dataclass(slots=True)
class Status:
    stream: TextIO
    enabled: bool
    _label: str = ""
    _drawn: bool = False
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    def show(self, label: str) -> None:
        """Spin with `label` until `clear`; a no-op off a terminal."""
        if not self.enabled:
            return
        width = shutil.get_terminal_size().columns - 3  # a wrapped line cannot be erased
        self._label = label if len(label) <= width else label[: max(width - 1, 0)] + "…"
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._spin())

    def clear(self) -> None:
        """Stop spinning and erase the line, before other output."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    async def _spin(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            frame = 0
            while True:
                self.stream.write(f"\r\x1b[K{FRAMES[frame % len(FRAMES)]} {self._label}")
                self.stream.flush()
                self._drawn = True
                frame += 1
                await asyncio.sleep(INTERVAL)
