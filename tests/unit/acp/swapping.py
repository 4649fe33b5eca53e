"""The racing swapper: a directory (or file) and a symlink exchanged atomically
(`renameat2(RENAME_EXCHANGE)`) again and again, so the path is always one or the other,
each for about as long as a check and an editor round trip take. `Swapper` does it
from a thread (a process loopd knows nothing of); `swapper_command` is the same loop as
a command, to start through a session's process registry, as a model's background
command would."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from pathlib import Path

from loopd.sandbox.base import PreparedCommand

PERIOD = 0.0005


def exchange(a: bytes, b: bytes) -> None:
    """Swap two names atomically (`renameat2(RENAME_EXCHANGE)`)."""
    if ctypes.CDLL(None, use_errno=True).renameat2(-100, a, -100, b, 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def plant_link(real: Path, target: Path) -> Path:
    """The symlink to `target` beside `real` that the swapper exchanges it with."""
    link = real.with_name("swap-link")
    os.symlink(target, link)
    return link


class Swapper(threading.Thread):
    """Exchanges `real` with a symlink to `target` every `period` seconds."""

    def __init__(self, real: Path, target: Path, period: float = PERIOD) -> None:
        super().__init__(daemon=True)
        self.period = period
        self.real, self.link = os.fsencode(real), os.fsencode(plant_link(real, target))
        self.halt = threading.Event()
        self.flips = 0

    def run(self) -> None:
        while not self.halt.is_set():
            exchange(self.real, self.link)
            self.flips += 1
            self.halt.wait(self.period)


SWAP_LOOP = """
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = (p.encode() for p in sys.argv[1:3])
while True:
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        sys.exit(ctypes.get_errno())
    time.sleep(float(sys.argv[3]))
"""
"""The swapper's loop as a Python program: `python -c SWAP_LOOP REAL LINK PERIOD`."""


def swapper_command(real: Path, target: Path, period: float = PERIOD) -> PreparedCommand:
    """The swapper as a command: exchanges `real` with a symlink to `target` until
    it is stopped. Contained, as bubblewrap runs it (its tree ends with it)."""
    link = plant_link(real, target)
    argv = (sys.executable, "-c", SWAP_LOOP, str(real), str(link), str(period))
    env = {"PATH": os.environ.get("PATH", "")}
    return PreparedCommand(argv, env, str(real.parent), contained=True)
