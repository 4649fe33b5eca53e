"""Finding a test's processes by a marker in their command line (a number no other
process uses), to prove a command was, or was not, left running. A killed process
takes a moment to go (a signal is delivered, not awaited), so `ended` waits for its
exit through pidfds, bounded, instead of looking once."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path


def pids(marker: str) -> list[int]:
    """The live processes whose command line holds `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
    return found


def running(marker: str) -> bool:
    return bool(pids(marker))


GRACE = 10.0  # seconds a killed process may take to go


async def ended(marker: str) -> bool:
    """Whether every process holding `marker` exits within `GRACE` seconds."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(GRACE):
            for pid in pids(marker):
                try:
                    fd = os.pidfd_open(pid)
                except ProcessLookupError:
                    continue
                exited = loop.create_future()
                loop.add_reader(fd, exited.set_result, None)
                try:
                    await exited
                finally:
                    loop.remove_reader(fd)
                    os.close(fd)
    except TimeoutError:
        return False
    return True
