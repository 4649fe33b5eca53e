"""The daemon's stderr: each connection's own (the editor's log), else the daemon's.

Standard library only: installed before the socket listens.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
from typing import IO

editor_stderr: contextvars.ContextVar[IO[str] | None] = contextvars.ContextVar(
    "loopd_editor_stderr", default=None
)


class RoutedStderr(io.TextIOBase):
    """`sys.stderr` in the daemon: the stderr of the connection whose task (or
    thread, `asyncio.to_thread` carries the context) is writing, else the daemon's
    log. An editor that closed its stderr loses the line, nothing else."""

    def __init__(self, fallback: IO[str]) -> None:
        self._fallback = fallback

    def write(self, text: str) -> int:
        stream = editor_stderr.get() or self._fallback
        with contextlib.suppress(OSError, ValueError):
            stream.write(text)
            stream.flush()
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            (editor_stderr.get() or self._fallback).flush()

    def fileno(self) -> int:
        return self._fallback.fileno()
