"""Memory and CPU of a process tree, read from /proc (Linux): the summed resident
set of every process under some roots, sampled while they run, their CPU time, and
the loopd daemon that serves a data dir (not a child of the forwarder that started
it)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

PROC = Path("/proc")
INTERVAL = 0.01  # seconds between samples


class TreeMemory:
    """The peak of the summed RSS of `roots()` and all their descendants, sampled
    every `INTERVAL` in a thread while `sampling` is entered (and whenever `sample`
    is called: at the moments that matter, so a peak between samples is not missed)."""

    def __init__(self, roots: Callable[[], Iterable[int]]) -> None:
        self.roots = roots
        self.peak = 0
        self._stop = threading.Event()

    def sample(self) -> int:
        total = sum(rss(pid) for pid in tree(self.roots()))
        self.peak = max(self.peak, total)
        return total

    @contextlib.contextmanager
    def sampling(self) -> Iterator[TreeMemory]:
        thread = threading.Thread(target=self._run, name="tree-memory", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            self.sample()


def tree(roots: Iterable[int]) -> set[int]:
    """`roots` and every process descended from them, as /proc lists them now."""
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo += children(pid)
    return seen


def children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in (PROC / str(pid) / "task").iterdir():
            with contextlib.suppress(OSError):
                found += [int(c) for c in (task / "children").read_text().split()]
    return found


def rss(pid: int) -> int:
    """Bytes resident for `pid`; 0 once it is gone."""
    try:
        status = (PROC / str(pid) / "status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def tree_cpu(roots: Iterable[int]) -> float:
    """Seconds of CPU (user and system) the processes of the tree under `roots` have
    used so far; a process that already exited no longer counts."""
    return sum(cpu(pid) for pid in tree(roots))


def cpu(pid: int) -> float:
    """Seconds of CPU `pid` has used (all its threads); 0 once it is gone."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rpartition(")")[2].split()  # after the name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def daemon_pids(loopd_home: str, exclude: int) -> list[int]:
    """The processes of this user running loopd with `LOOPD_HOME=loopd_home` that
    are not `exclude` or its descendants: the daemon serving that data dir."""
    skip = tree([exclude])
    found: list[int] = []
    wanted = f"LOOPD_HOME={loopd_home}".encode()
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"loopd" in cmdline and (wanted in environ or loopd_home.encode() in cmdline):
            found.append(int(entry.name))
    return found
