"""What the tools of one session share: roots, file access, the command sandbox, the
session's background processes, the plan, and limits.

One `ToolEnv` per session, closed with the session. Everything effectful a tool does
goes through a field of it, so the session layer decides the mechanisms (the ACP
adapter swaps `files` for the editor's buffers, the policy layer picks the sandbox)
and the tools stay the same.
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from loopd.context.freshness import FileLog
from loopd.engine.ports import Clock
from loopd.home import expand_home, home_path
from loopd.policy.grants import CallGrants
from loopd.policy.paths import resolved
from loopd.policy.reading import DiskReader
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import PlanEntry
from loopd.protocol.questions import UserQuestions
from loopd.protocol.reading import FileReader
from loopd.sandbox.base import CommandSandbox, Unsandboxed
from loopd.sandbox.netgate import NetworkGate
from loopd.tools.access import EditorTerminals, FileAccess, LocalFiles
from loopd.tools.changes import ChangeLog
from loopd.tools.processes import BackgroundProcesses

RUNNING_CALL: ContextVar[str] = ContextVar("loopd_running_call", default="call")
"""The id of the tool call running in this task (set by the registry)."""


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
        (symlinks resolved), which is the form declarations and policy compare.
        `Unresolvable` (a refusal) for one whose links change as it is resolved."""
        if not path.strip():
            raise ToolInputError("the path is empty; give a file path relative to the cwd")
        if "\0" in path:
            raise ToolInputError("the path contains a NUL character")
        return resolved(os.path.join(self.cwd, expand_home(path, self.home)))

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
