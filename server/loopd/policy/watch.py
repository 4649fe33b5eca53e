"""Proving that a path meant the same file for a whole interval: `PathWatch`.

`open_beneath` proves where a path leads at the moment loopd opens it. Another process
(the editor) that is handed the path resolves it again, later, on its own, following
symlinks; a sandboxed command swapping a directory for a symlink in between would make
it read or write somewhere else. `PathWatch` closes that gap for an interval instead of
an instant: it watches, with inotify, every directory the path passes through below
its root (the root and what is above it are not writable by commands), from before
loopd's own beneath-open until after the editor answered. A swap must change an entry
of one of those directories, and the kernel queues that event before the changing
call returns, so if `moved()` is False at the end, every resolution of the path during
the interval went through the same entries loopd proved.

The watch fails closed: when inotify is unavailable, out of instances or watches, or
its queue overflowed, `moved()` is True.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import struct
from types import TracebackType

IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_DONT_FOLLOW = 0x2000000
_ENTRY_CHANGES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_DIR_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_Q_OVERFLOW
_EVENT = struct.Struct("iIII")

_libc = ctypes.CDLL(None, use_errno=True)


class PathWatch:
    """Watches the directories between `root` and `path` (canonical, `path` under
    `root`) for entry changes on the path's own components. Use as a context manager;
    `moved()` drains the queue and says whether anything on the path changed (or the
    watch could not be set up) since it was entered."""

    def __init__(self, root: str, path: str) -> None:
        rel = os.path.relpath(path, root)
        self._parts = [] if rel == "." else rel.split("/")
        self._root = root
        self._fd = -1
        self._names: dict[int, str] = {}  # watch descriptor -> the component below it
        self._broken = False

    def __enter__(self) -> PathWatch:
        if not self._parts or ".." in self._parts:
            self._broken = True
            return self
        self._fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0:
            self._broken = True
            return self
        directory = self._root
        for part in self._parts:
            mask = _ENTRY_CHANGES | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
            wd = _libc.inotify_add_watch(self._fd, os.fsencode(directory), mask)
            if wd < 0:
                self._broken = True
                break
            self._names[wd] = part
            directory = os.path.join(directory, part)
        return self

    def moved(self) -> bool:
        if self._broken:
            return True
        while True:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return False
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                return True
            if self._touches_path(data):
                self._broken = True
                return True

    def _touches_path(self, data: bytes) -> bool:
        offset = 0
        while offset < len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
            offset += _EVENT.size + length
            if mask & IN_Q_OVERFLOW or wd not in self._names:
                return True
            if mask & _DIR_GONE:
                return True
            name = os.fsdecode(raw.rstrip(b"\0"))
            if mask & _ENTRY_CHANGES and name == self._names[wd]:
                return True
        return False

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
