"""A guard for tests that put a FIFO where loopd reads: if a regression opens one
for reading (which blocks until a writer comes, in a call no signal interrupts), a
thread opens it for writing after a grace period, so the reader gets an empty file
and the test fails instead of hanging the run: the FIFOs it had to release are
listed, and a test asserts that list is empty."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

GRACE = 5.0  # seconds; a read that does not block takes milliseconds


@contextlib.contextmanager
def released(*fifos: Path) -> Iterator[list[Path]]:
    """Within the block, any reader still blocked on one of `fifos` after `GRACE`
    seconds (and every half second after) is released; the list yielded names each
    FIFO a reader was found blocked on."""
    done = threading.Event()
    freed: list[Path] = []

    def release() -> None:
        if done.wait(GRACE):
            return
        while not done.is_set():
            for fifo in fifos:
                with contextlib.suppress(OSError):  # ENXIO: nobody is reading it
                    if stat.S_ISFIFO(os.lstat(fifo).st_mode):  # not yet, or no more
                        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                        freed.append(fifo)
            done.wait(0.5)

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        yield freed
    finally:
        done.set()
        thread.join()
