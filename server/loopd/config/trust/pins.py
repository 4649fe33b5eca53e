"""What a workspace config runs, pinned by content (see `loopd.config.trust.store`).

A trusted `[runtimes.*]` table runs a program outside the sandbox. The program
itself is never one inside the workspace (`loopd.executables`), but its arguments
and environment may name workspace files it then runs or loads
(`args = ["tools/agent.py"]`), and a sandboxed command can rewrite those. So every
string of a runtime's `command`, `args` and `env` values (and the value of a
`--flag=value`) that names a path beneath the folder, relative to it or absolute, is
pinned: the sha256 of its bytes; `ABSENT` when nothing is there and the string
looks like a path (a `/` or a `.` in it: a file created later is a change too);
`NOT_A_FILE` for a folder or a special file (never read: a FIFO would block).
A file over 64 MiB is hashed up to there, then identified by its size, mtime and
inode. Pins are part of what trust records: when one moves,
the folder is asked about again. Pins are hashed here, not read through the
workspace reader (`loopd.protocol.reading`), which withholds secrets: an `.env` a
runtime loads must be pinned too, and only its digest is ever kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from typing import Any

from loopd.protocol.tomlvalues import loads_toml

Pins = tuple[tuple[str, str], ...]  # (path, sha256 | ABSENT | NOT_A_FILE), sorted

ABSENT = "absent"
NOT_A_FILE = "not a regular file"
_CHUNK = 1 << 20
_HASHED = 64 << 20  # bytes of one file hashed; past it, its size, mtime and inode count


def pinned_runs(folder: str, content: bytes) -> Pins:
    """The pins of a workspace file's bytes; none when they do not parse (such a
    file is never applied)."""
    try:
        document = loads_toml(content.decode("utf-8"))
    except ValueError:  # TOMLDecodeError, UnicodeDecodeError, too deep
        return ()
    pins: dict[str, str] = {}
    for value in _run_strings(document.get("runtimes")):
        path = _beneath(folder, value)
        if path is None:
            continue
        digest = _digest(path)
        if digest != ABSENT or "/" in value or "." in value:  # not `--verbose`, `serve`
            pins[path] = digest
    return tuple(sorted(pins.items()))


def moved(pins: Pins) -> tuple[str, ...]:
    """The pinned paths that are not what was pinned now: checked again before a
    trusted runtime starts, since a command may write one after the file was read."""
    return tuple(path for path, digest in pins if _digest(path) != digest)


def fingerprint(sha256: str, runs: Pins) -> str:
    """One digest of a file's sha256 and its pins."""
    return hashlib.sha256(json.dumps([sha256, runs]).encode()).hexdigest()


def _run_strings(runtimes: Any) -> Iterator[str]:
    if not isinstance(runtimes, Mapping):
        return
    for table in runtimes.values():
        if not isinstance(table, Mapping):
            continue
        env = table.get("env")
        args = table.get("args")
        values = [table.get("command")]
        values += list(args) if isinstance(args, list) else []
        values += list(env.values()) if isinstance(env, Mapping) else []
        for value in values:
            if isinstance(value, str) and value:
                yield value
                if "=" in value:
                    yield value.partition("=")[2]


def _beneath(folder: str, value: str) -> str | None:
    """The canonical path `value` names when it lies beneath `folder`."""
    if "\0" in value:
        return None
    path = os.path.normpath(os.path.join(folder, value))
    for candidate in (path, os.path.realpath(path)):
        if candidate.startswith(folder.rstrip("/") + "/"):
            return path
    return None


def _digest(path: str) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return ABSENT
    except OSError:
        return NOT_A_FILE
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return NOT_A_FILE
        info = os.fstat(fd)
        digest = hashlib.sha256()
        for _ in range(_HASHED // _CHUNK):
            if not (chunk := handle.read(_CHUNK)):
                break
            digest.update(chunk)
        if info.st_size > _HASHED:  # a start never hashes gigabytes: the rest by size
            digest.update(f"{info.st_size}:{info.st_mtime_ns}:{info.st_ino}".encode())
        return digest.hexdigest()
