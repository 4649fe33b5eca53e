"""How tools reach files and the editor's terminals: the ports and their local forms.

`FileAccess` (read and write text), `GatedFiles` (one that decides a path first),
`EditorTerminals` (commands run where the person watches) and their companions sit
here, below everything that holds or implements them: the tools' `ToolEnv`, the
change log, the runtime contract, and the editors' routes (`loopd.acp.client_io`,
`loopd.lsp.documents`). `LocalFiles` is the access on the local disk, through the one
reader (`loopd.policy.reading`); `RoutedFiles` picks an access per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from loopd.policy.beneath import PathEscapeError, check_regular
from loopd.policy.reading import DiskReader
from loopd.protocol.reading import FileReader, ReadRefused


class NotText(Exception):
    """The file is binary (or not UTF-8) and cannot be handled as text."""


class FileTooLarge(Exception):
    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size} bytes, over the {limit}-byte limit")
        self.size = size
        self.limit = limit


class FileAccess(Protocol):
    """How tools read and write text files.

    A port because the editor may hold a newer version of a file than the disk (an
    unsaved buffer): the ACP adapter implements it over `fs/read_text_file` and
    `fs/write_text_file`. Paths are absolute. `read_text` raises `FileNotFoundError`,
    `IsADirectoryError`, `NotText` or `FileTooLarge`; `write_text` creates missing
    parent directories. `write_text` answers None when `text` was written as given,
    or `Reviewed` when a person reviewed it first and kept only part of it.
    """

    async def read_text(self, path: str) -> str: ...

    async def write_text(self, path: str, text: str) -> Reviewed | None: ...


@dataclass(frozen=True, slots=True)
class Reviewed:
    """What a reviewed write left (`loopd.lsp.review`): `written` is the file's text
    now, None when nothing was written (every change rejected); `note` tells the
    model which changes the person rejected, so it does not take them as done."""

    written: str | None
    note: str


@dataclass(frozen=True, slots=True)
class Admitted:
    """A path the policy let the running call use: `path` is canonical, `root` the
    directory it opens beneath; `inside` is False for an approved path outside the
    session's folders (opened beneath `/`)."""

    path: str
    root: str
    inside: bool


@runtime_checkable
class GatedFiles(FileAccess, Protocol):
    """`FileAccess` that decides a path before it is used. An editor's file route
    (`loopd.acp.client_io`, `loopd.lsp.documents`) asks `admit` first, so the editor
    is never asked for a path the policy refuses (a secret, an unapproved one), and
    it serves the editor only over a gate: over anything else it uses `local`."""

    def admit(self, path: str, *, write: bool) -> Admitted:
        """The decided path, or `PermissionError` saying why it may not be used."""
        ...


@dataclass(frozen=True, slots=True)
class LocalFiles:
    """`FileAccess` on the local disk, UTF-8, refusing files over `max_bytes` so one
    careless read cannot pull a whole disk image into memory."""

    max_bytes: int = 32 * 1024 * 1024

    async def read_text(self, path: str) -> str:
        return await asyncio.to_thread(self._read, path)

    async def write_text(self, path: str, text: str) -> None:
        await asyncio.to_thread(self._write, path, text)

    def _read(self, path: str) -> str:
        # Through the one reader (`loopd.policy.reading`), anywhere but never a secret
        # or the kernel's files: regular files only, opened without blocking (a FIFO
        # would block the open forever, a device would never end).
        return read_text_with(DiskReader(("/",)), path, self.max_bytes)

    def _write(self, path: str, text: str) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            info = os.stat(target)
            check_regular(info.st_mode, path)  # writing to a FIFO would block too
        target.write_bytes(text.encode("utf-8"))


class PathRefused(PermissionError):
    """The session may not use this path now; `reason` is written for the person."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(errno.EACCES, reason, path)
        self.reason = reason


def read_text_with(reader: FileReader, path: str, limit: int) -> str:
    """`path` read with `reader` as `FileAccess` text: a refusal is the error the
    registry tells the model its own way, binary content is `NotText`."""
    read = reader.read(path, max_bytes=limit)
    if isinstance(read, ReadRefused):
        raise _refused(path, read, limit)
    if b"\0" in read.data[:8192]:
        raise NotText(path)
    return decode_text(read.data, path)


def _refused(path: str, refused: ReadRefused, limit: int) -> Exception:
    match refused.problem:
        case "missing":
            return FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        case "directory":
            return IsADirectoryError(errno.EISDIR, "is a directory", path)
        case "too_large":
            return FileTooLarge(path, refused.size, limit)
        case "outside":  # the canonical path was inside: a link was swapped in since
            return PathEscapeError(path, "changed into a path that leaves the folder")
        case "secret":
            return PathRefused(refused.path, f"{refused.reason}; loopd never reads it")
        case "special" | "unreadable":
            return OSError(errno.EINVAL, refused.reason)


def decode_text(data: bytes, path: str) -> str:
    """`data` as UTF-8 text, or `NotText`."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotText(path) from e


@dataclass(frozen=True, slots=True)
class TerminalRun:
    """How a command run in an editor terminal ended. `output` is what the editor
    kept (it drops the start past the byte limit: `truncated`)."""

    output: str
    truncated: bool
    exit_code: int | None
    signal: str | None


class EditorTerminals(Protocol):
    """Commands run in the editor's terminals (ACP `terminal/*`), where the person
    watches the output stream. The editor spawns `argv` itself, so it must be a
    self-contained command: the caller hands over nothing the editor should add to."""

    async def run(
        self,
        argv: Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        on_start: Callable[[str], Awaitable[None]],
        output_byte_limit: int | None = None,
    ) -> TerminalRun:
        """Run to the end; `on_start` gets the terminal id as soon as it exists. A
        cancelled run releases the terminal, which kills the command."""
        ...


@dataclass(frozen=True, slots=True)
class RoutedFiles:
    """File access decided per call: `route(local)` names the access to use now (the
    prompting editor's, which may change between turns, or `local`)."""

    route: Callable[[FileAccess], FileAccess]
    local: FileAccess

    async def read_text(self, path: str) -> str:
        return await self.route(self.local).read_text(path)

    async def write_text(self, path: str, text: str) -> Reviewed | None:
        return await self.route(self.local).write_text(path, text)
