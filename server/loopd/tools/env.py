"""What the tools of one session share: roots, file access, the command sandbox, the
session's background processes, the plan, and limits.

One `ToolEnv` per session, closed with the session. Everything effectful a tool does
goes through a field of it, so the session layer decides the mechanisms (the ACP
adapter swaps `files` for the editor's buffers, the policy layer picks the sandbox)
and the tools stay the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import errno
import os
import re
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from loopd.context.freshness import FileLog
from loopd.engine.ports import Clock
from loopd.home import expand_home, home_path
from loopd.policy.beneath import PathEscapeError, check_regular
from loopd.policy.grants import CallGrants
from loopd.policy.reading import DiskReader
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import PlanEntry
from loopd.protocol.questions import UserQuestions
from loopd.protocol.reading import FileReader, ReadRefused
from loopd.sandbox.base import CommandSandbox, Unsandboxed
from loopd.sandbox.netgate import NetworkGate
from loopd.tools.changes import ChangeLog
from loopd.tools.processes import BackgroundProcesses

RUNNING_CALL: ContextVar[str] = ContextVar("loopd_running_call", default="call")
"""The id of the tool call running in this task (set by the registry)."""


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


class SystemClock:
    """The real clock, the default for a `ToolEnv`."""

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """Caps that keep one tool result from flooding the model's context. Sizes are in
    characters of text handed to the model unless the name says bytes."""

    read_default_lines: int = 2000
    read_max_line_chars: int = 2000
    read_max_chars: int = 100_000
    # A command's output (see `loopd.tools.output`): for the model, head + tail; for
    # the editor at the end, head + tail; live, the latest characters per update,
    # within a budget per call; in a file, all of it up to a size.
    output_max_chars: int = 30_000
    shown_max_chars: int = 64_000
    live_max_chars: int = 16_000
    live_budget_chars: int = 2_000_000
    spill_max_bytes: int = 256 * 1024 * 1024
    bash_default_timeout: float = 120.0
    bash_max_timeout: float = 600.0
    kill_grace: float = 2.0  # seconds between SIGTERM and SIGKILL
    glob_max_results: int = 500
    grep_max_matches: int = 200
    grep_max_line_chars: int = 300


PlanListener = Callable[[tuple[PlanEntry, ...]], Awaitable[None]]


@dataclass(slots=True)
class _Scratch:
    """Where the session's scratch folder is, once made: one holder shared by an
    env and its children, so the folder is made once and removed with the session."""

    path: str | None = None


@dataclass(eq=False)
class ToolEnv:
    """The per-session state tools run against. `roots` are the session's workspace
    roots, canonicalised, the first being the working directory. `on_plan` is set by
    the session layer to turn plan updates into `PlanUpdated` events. Close it with
    `aclose()`: that stops every background process the session started.

    `sandbox` contains commands; `outside` prepares the ones the person approved to
    run outside it (still with a scrubbed environment). `reads` holds the read
    bookmarks `write` and `edit` check (see `loopd.context.freshness`). `grants` carries what the
    policy allowed each call beyond the defaults (see `loopd.policy.grants`). `reader`
    reads what the tools read besides the files they are asked for (ignore files, the
    files a search looks through), beneath the roots, with the session's secrets.
    `network` is network by domain, when configured and the sandbox can bind its
    proxy in."""

    roots: tuple[str, ...]
    files: FileAccess = field(default_factory=LocalFiles)
    reader: FileReader = field(default_factory=lambda: DiskReader(()))
    sandbox: CommandSandbox = field(default_factory=lambda: Unsandboxed(os.environ))
    outside: CommandSandbox = field(default_factory=lambda: Unsandboxed(os.environ))
    grants: CallGrants = field(default_factory=CallGrants)
    clock: Clock = field(default_factory=SystemClock)
    limits: ToolLimits = field(default_factory=ToolLimits)
    on_plan: PlanListener | None = None
    # The prompting editor's terminals right now, or None (the editor has none).
    editor_terminals: Callable[[], EditorTerminals | None] = lambda: None
    # Who can answer a question right now (the prompting editor, a terminal), or None.
    person: Callable[[], UserQuestions | None] = lambda: None
    session_id: str = ""
    # Where a command's full output is written when what is shown was cut (the
    # session's dir under the data dir); None: nowhere.
    outputs_dir: str | None = None
    network: NetworkGate | None = None
    plan: tuple[PlanEntry, ...] = ()
    changes: ChangeLog = field(default_factory=ChangeLog)
    reads: FileLog = field(default_factory=FileLog)  # what the agent saw of each file
    # The editor's home (`loopd.home.home_path` of its environment): what `~` means
    # and where home secrets are. The default is this process's, for one editor.
    home: str = field(default_factory=lambda: home_path(os.environ))
    processes: BackgroundProcesses = field(init=False)
    _scratch: _Scratch = field(default_factory=_Scratch, init=False)

    def __post_init__(self) -> None:
        if not self.roots:
            raise ValueError("a ToolEnv needs at least one root (the working directory)")
        self.roots = tuple(os.path.realpath(r) for r in self.roots)
        self.reader = self.reader.within(self.roots)
        self.processes = BackgroundProcesses(self.clock, self.limits.kill_grace)

    @property
    def cwd(self) -> str:
        return self.roots[0]

    def resolve(self, path: str) -> str:
        """An argument path made absolute (relative to the cwd) and canonical
        (symlinks resolved), which is the form declarations and policy compare."""
        if not path.strip():
            raise ToolInputError("the path is empty; give a file path relative to the cwd")
        if "\0" in path:
            raise ToolInputError("the path contains a NUL character")
        return os.path.realpath(os.path.join(self.cwd, expand_home(path, self.home)))

    def display(self, path: str) -> str:
        """A canonical path as people and the model read it: relative to the cwd when
        inside it, absolute otherwise."""
        if path == self.cwd:
            return "."
        if path.startswith(self.cwd.rstrip(os.sep) + os.sep):
            return os.path.relpath(path, self.cwd)
        return path

    def output_file(self) -> str | None:
        """A fresh path for the running call's full output, or None."""
        if self.outputs_dir is None:
            return None
        os.makedirs(self.outputs_dir, mode=0o700, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_-]", "_", RUNNING_CALL.get())[:80]
        return os.path.join(self.outputs_dir, f"{name}.log")

    def scratch_dir(self) -> str:
        """A private directory for this session's own files (background logs),
        removed on close."""
        if self._scratch.path is None:
            self._scratch.path = tempfile.mkdtemp(prefix="loopd-")
        return self._scratch.path

    def for_child(self) -> ToolEnv:
        """This env for a child turn (`explore`): the same roots, files, sandbox,
        grants, processes, scratch folder and change log (what a child changes is
        the session's), but read bookmarks of its own: a file only the child read
        was never seen by the parent's model, which must not overwrite it unread.
        Closing the parent closes what they share."""
        child = copy.copy(self)
        child.reads = FileLog()
        return child

    async def set_plan(self, entries: tuple[PlanEntry, ...]) -> None:
        self.plan = entries
        if self.on_plan is not None:
            await self.on_plan(entries)

    async def aclose(self) -> None:
        await self.processes.aclose()
        if self.network is not None:
            await self.network.aclose()
        if self._scratch.path is not None:
            shutil.rmtree(self._scratch.path, ignore_errors=True)
            self._scratch.path = None
