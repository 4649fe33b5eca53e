"""Reading files loopd did not write: the one port every read of a workspace or a
home goes through (instruction files, skills, config, ignore files, the file tools).

A repository controls its files, so each may be a symlink out of it, a FIFO that
blocks the open forever, a device that never ends, a huge file or a secret under a
harmless name. The reader decides all of that at the moment of use and answers with
a value, never an exception: what was read (`FileRead`, perhaps cut at the bound the
caller gave) or why not (`ReadRefused`). A race (a file swapped for a symlink between
a check and the open) ends in a refusal too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, Literal, Protocol

ReadProblem = Literal[
    "missing", "directory", "outside", "special", "secret", "too_large", "unreadable"
]
"""Why a file was not read: it does not exist; it is a directory; it lies, or leads
through a symlink, outside the reader's roots; it is a FIFO, socket or device; it is
a secret (keys, credentials, loopd's own folders, the kernel's files); it is over
the size bound; or the system refused it."""

Over = Literal["refuse", "cut"]
"""What a file over the bound gives: a refusal, or its first bytes marked `cut`."""


@dataclass(frozen=True, slots=True)
class FileRead:
    """The bytes read from canonical `path`: all of it, or its first bytes when
    `cut` (the file held `size` bytes when opened)."""

    path: str
    data: bytes
    size: int
    cut: bool = False

    def text(self) -> str:
        """The bytes as UTF-8; undecodable bytes become U+FFFD."""
        return self.data.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class ReadRefused:
    """`path` (canonical when it could be resolved) was not read: `problem` says
    which kind of refusal, `reason` says why, written for the person; `size` is the
    file's, for "too_large"."""

    path: str
    problem: ReadProblem
    reason: str
    size: int = 0


class FileReader(Protocol):
    """Reads regular files beneath its roots, never following a symlink out, never
    blocking, within a size bound, and never a secret."""

    def read(self, path: str, *, max_bytes: int, over: Over = "refuse") -> FileRead | ReadRefused:
        """`path` (absolute) read whole, or cut at `max_bytes` when `over` is "cut"."""
        ...

    def open(self, path: str) -> BinaryIO | ReadRefused:
        """`path` opened for a bounded read of the caller's own (line by line): the
        same checks as `read`, but the caller reads and closes it."""
        ...

    def read_in(
        self, folder: int, name: str, path: str, *, max_bytes: int
    ) -> FileRead | ReadRefused:
        """`name` (one component) in the open directory descriptor `folder`, whose
        canonical path is `path` beneath the roots: a walk that reached `folder` by
        descriptors, through no link (the checkpoint scan's). The same checks as `read`
        (a secret, not beneath the roots, a link, not a regular file, over the bound)
        without resolving `path` again."""
        ...

    def withheld(self, path: str) -> str | None:
        """Why `path` is never read wherever it lies (a secret: keys, credentials,
        loopd's own folders, kernel files), or None. For what another program read
        (ripgrep's matches) before it reaches anyone."""
        ...

    def within(self, roots: tuple[str, ...], spared: tuple[str, ...] = ()) -> FileReader:
        """A reader with the same rules beneath other roots. `spared` are further
        folders inside a secret location it may read all the same (the person's own
        skills in loopd's config folder); files there named like secrets stay
        refused."""
        ...
