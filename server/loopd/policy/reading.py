"""`DiskReader`: the `FileReader` port on the local disk, for every file loopd reads
from a workspace or a home (see `loopd.protocol.reading`).

It builds on what the file tools already do (`loopd.policy.beneath`, `loopd.policy.
secrets`) so the rules are written once:

1. the path is canonicalised (`realpath`) and must lie beneath one of the roots: a
   symlink may lead anywhere inside them, never out;
2. secrets are refused by the file tools' own rules, loopd's own folders (`secrets`)
   included wherever they are, and so is anything in the kernel's folders (`/proc`,
   `/sys`: `/proc/self/environ` is a "regular" file holding the API key);
3. the canonical path is opened beneath its root with no symlink on the way
   (`open_beneath(..., exact=True)`), `O_NONBLOCK`: a symlink swapped in after step 1
   fails the open, and a FIFO cannot block it;
4. `fstat` on the open descriptor: only a regular file is read, and at most the
   bound the caller gave.

`read_in` is the same read for a walk that holds the file's folder open (reached
beneath a root by descriptors, through no link): steps 2 and 4 on the path it names,
and step 3 as an `O_NOFOLLOW` open in that folder, without resolving the path again.

Every outcome is a value (`FileRead` or `ReadRefused`); nothing is raised.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from dataclasses import dataclass, field
from typing import BinaryIO

from loopd.policy.beneath import (
    Method,
    PathEscapeError,
    file_kind,
    open_beneath,
    open_in,
    relative_to,
)
from loopd.policy.secrets import contains, secret_reason
from loopd.protocol.reading import FileRead, Over, ReadProblem, ReadRefused

KERNEL_FOLDERS = ("/proc", "/sys")
"""What the kernel makes up on reading, in files that look regular: never a file of
the person's. (`/dev` holds devices, refused as such, and tmpfs a workspace may use.)"""


@dataclass(frozen=True, slots=True)
class DiskReader:
    """`FileReader` beneath `roots` (canonicalised here). `home` and `secrets` (loopd's
    own folders, further secret locations) feed the secret rules; `exempt` are folders
    inside a secret location that this reader may still read (the person's skills in
    loopd's config folder), file names of secrets excepted."""

    roots: tuple[str, ...]
    home: str = ""
    secrets: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()
    method: Method = "auto"
    _canonical: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _spared: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_canonical", tuple(os.path.realpath(r) for r in self.roots))
        object.__setattr__(self, "_spared", tuple(os.path.realpath(e) for e in self.exempt))

    def read(self, path: str, *, max_bytes: int, over: Over = "refuse") -> FileRead | ReadRefused:
        opened = self._open(path)
        if isinstance(opened, ReadRefused):
            return opened
        return _bounded(*opened, max_bytes, over)

    def read_in(
        self, folder: int, name: str, path: str, *, max_bytes: int
    ) -> FileRead | ReadRefused:
        if "/" in name or name in ("", ".", "..") or self._root_of(path) is None:
            return ReadRefused(path, "outside", self._outside(path))
        if (reason := self._secret(path)) is not None:
            return ReadRefused(path, "secret", reason)
        try:  # no link: one swapped in fails the open; O_NONBLOCK: a FIFO cannot block it
            fd = open_in(folder, name, _FLAGS)
        except PathEscapeError:
            return ReadRefused(path, "outside", f"{path} changed into a link while read")
        except OSError as exc:
            return _refusal(path, exc)
        opened = _regular(path, fd)
        return opened if isinstance(opened, ReadRefused) else _bounded(*opened, max_bytes)

    def open(self, path: str) -> BinaryIO | ReadRefused:
        opened = self._open(path)
        return opened if isinstance(opened, ReadRefused) else opened[1]

    def withheld(self, path: str) -> str | None:
        canonical = _canonical(path)
        return self._secret(canonical) if canonical is not None else None

    def within(self, roots: tuple[str, ...], spared: tuple[str, ...] = ()) -> DiskReader:
        return dataclasses.replace(self, roots=roots, exempt=(*self.exempt, *spared))

    def _open(self, path: str) -> tuple[str, BinaryIO] | ReadRefused:
        canonical = _canonical(path)
        if canonical is None:
            return ReadRefused(path, "unreadable", f"{path!r} is not a path (a NUL byte)")
        root = self._root_of(canonical)
        if root is None:
            return ReadRefused(canonical, "outside", self._outside(path))
        if (reason := self._secret(canonical)) is not None:
            return ReadRefused(canonical, "secret", reason)
        rel = relative_to(root, canonical)
        try:
            fd = open_beneath(root, rel, _FLAGS, method=self.method, exact=True)
        except PathEscapeError:  # a symlink swapped in since `realpath`
            return ReadRefused(canonical, "outside", f"{path} changed into a link while read")
        except OSError as exc:
            return _refusal(canonical, exc)
        return _regular(canonical, fd)

    def _root_of(self, canonical: str) -> str | None:
        return next((r for r in self._canonical if contains(r, canonical)), None)

    def _outside(self, path: str) -> str:
        where = ", ".join(self._canonical) or "no folder"
        return f"{path} leads outside the folders loopd reads it from ({where})"

    def _secret(self, canonical: str) -> str | None:
        if any(contains(k, canonical) for k in KERNEL_FOLDERS):
            return f"{canonical} is a file the kernel makes up, not one of the folder's"
        return secret_reason(canonical, self.home, self.secrets, self._spared)


_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def _regular(canonical: str, fd: int) -> tuple[str, BinaryIO] | ReadRefused:
    """`fd`, opened: kept when `fstat` says a regular file, else closed and refused."""
    kind = file_kind(os.fstat(fd).st_mode)
    if kind != "regular file":
        os.close(fd)
        problem: ReadProblem = "directory" if kind == "directory" else "special"
        return ReadRefused(canonical, problem, f"{canonical} is a {kind}, not a regular file")
    return canonical, os.fdopen(fd, "rb")


def _bounded(
    canonical: str, handle: BinaryIO, max_bytes: int, over: Over = "refuse"
) -> FileRead | ReadRefused:
    """At most `max_bytes` of `handle` (closed after), or cut there when `over` is "cut"."""
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes and over == "refuse":
            return _too_large(canonical, size, max_bytes)
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            return ReadRefused(canonical, "unreadable", f"{canonical}: {exc.strerror}")
    if len(data) <= max_bytes:
        return FileRead(canonical, data, len(data))
    if over == "refuse":
        return _too_large(canonical, max(size, len(data)), max_bytes)
    return FileRead(canonical, data[:max_bytes], max(size, len(data)), cut=True)


def _canonical(path: str) -> str | None:
    """`realpath`, or None for a string no system call takes (a NUL byte in it)."""
    try:
        return os.path.realpath(path)
    except ValueError:
        return None


def _too_large(path: str, size: int, limit: int) -> ReadRefused:
    reason = f"{path} is {size} bytes, over the {limit}-byte limit"
    return ReadRefused(path, "too_large", reason, size)


def _refusal(path: str, exc: OSError) -> ReadRefused:
    match exc.errno:
        case errno.ENOENT | errno.ENOTDIR:
            return ReadRefused(path, "missing", f"{path} does not exist")
        case errno.ENXIO:  # what opening a unix socket gives
            return ReadRefused(path, "special", f"{path} is a socket or device, not a regular file")
        case errno.ELOOP:
            return ReadRefused(path, "outside", f"{path} goes through a symlink")
        case _:
            return ReadRefused(path, "unreadable", f"{path}: {exc.strerror or exc}")
