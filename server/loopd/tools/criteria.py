"""The workspace's done criteria, run for real: `SandboxedDone` is the engine's
`DoneChecks` over one session's `ToolEnv`.

A criterion runs exactly as a `bash` call would (`bash -c COMMAND` in the session's
sandbox, its own process group, the network off, the workspace writable), with the
`[done]` timeout; on timeout the whole group is killed and the criterion is unmet.
A criterion that cannot run at all (the shell cannot be spawned, the command is not
found) is `unavailable`, which never sends the turn back. Unless it could run when
the turn began: a criterion the agent made unrunnable (its script deleted or made
not executable, bash's exit 126/127) is `unmet`, or breaking the measurement would
be the shortest way to a turn that ends without being sent back. What could run at
the turn's start is judged there, without running anything: the command's program
(its first word) is an executable file, a program on PATH or a shell builtin.

Protected writes are noticed two ways, because a shell command's writes have no
path: the paths the file tools wrote, and a before/after snapshot of the files the
protected globs match, taken when the turn begins. The snapshot keeps what a
command cannot put back: the inode and the change time (ctime), which every write,
rename over, `touch -r` or `chmod` moves and only the kernel's clock sets (size and
mtime alone were faked by a same-size rewrite and `touch -r`), and the content's
digest, read through the session's reader: a store through a shared mapping made
before the snapshot moves neither mtime nor ctime until the kernel writes the page
back, and on kernels without fine-grained timestamps a rewrite within the clock's
tick keeps ctime too. It compares at most `MAX_WATCHED` files and digests at most
`MAX_DIGESTED` bytes, and says when it stopped at either.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field

from loopd.engine.done import Criterion, DoneSet, DoneState
from loopd.executables import find_program
from loopd.policy.commands import is_safe_command
from loopd.policy.rules import MatchContext, path_matches
from loopd.protocol.reading import FileRead, ReadRefused
from loopd.protocol.verification import CriterionResult, ProtectedWrites, Watch
from loopd.sandbox.base import CommandSpec
from loopd.tools.env import ToolEnv
from loopd.tools.output import HeadTail
from loopd.tools.processes import run_captured
from loopd.walk import walk

OUTPUT_CHARS = 8_000  # of a criterion's output, for the model and the person
NOT_FOUND = (126, 127)  # bash: not executable, command not found
MAX_WATCHED = 20_000  # protected files snapshotted per turn, at most
MAX_DIGESTED = 64 * 1024 * 1024  # bytes of protected files digested per snapshot, at most
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__"})

Identity = tuple[int | str, ...]  # (device, inode, mode, size, mtime, ctime, digest)
Snapshot = dict[str, Identity]
UNREAD = ""  # the digest of a file past the budget: compared by its identity alone


@dataclass(eq=False)
class SandboxedDone:
    env: ToolEnv
    done: DoneSet
    state: DoneState = field(default_factory=DoneState)
    _before: Snapshot = field(default_factory=dict)
    _watch: Watch = field(default_factory=Watch)
    search_path: str | None = None  # the editor's PATH, where a criterion's program is found
    _runnable: set[str] = field(default_factory=set)  # criteria that could run at the start

    async def run(self, criterion: Criterion) -> CriterionResult:
        env = self.env
        spec = CommandSpec(("bash", "-c", criterion.command), env.cwd, env.roots, network=False)
        output = HeadTail(OUTPUT_CHARS)

        async def on_output(text: str) -> None:
            output.append(text)

        try:
            prepared = env.sandbox.prepare(spec)
            finished = await run_captured(
                prepared,
                clock=env.clock,
                time_limit=self.done.timeout_seconds,
                grace=env.limits.kill_grace,
                on_output=on_output,
            )
        except OSError as err:
            return CriterionResult(criterion.name, "unavailable", f"could not run: {err}")
        text = output.render(OUTPUT_CHARS)
        code = finished.exit_code
        if code is None:
            timeout = f"timed out after {self.done.timeout_seconds:g} s; killed"
            return CriterionResult(criterion.name, "unmet", f"{text}\n{timeout}".strip(), None)
        if code == criterion.exit_code:
            return CriterionResult(criterion.name, "met", text, code)
        if code in NOT_FOUND and criterion.name in self._runnable:
            broken = f"{text}\nit could run when the turn began; now it cannot (exit {code})"
            return CriterionResult(criterion.name, "unmet", broken.strip(), code)
        if code in NOT_FOUND:
            return CriterionResult(criterion.name, "unavailable", text, code)
        return CriterionResult(criterion.name, "unmet", text, code)

    def write_seq(self) -> int:
        """The ledger's count; while a background command that is not read-only
        runs, it moves at every look: that command may write at any moment, so no
        check can be trusted to have seen the workspace as it is."""
        sandboxed = self.env.sandbox.tier != "none"
        if any(not is_safe_command(p.command, sandboxed) for p in self.env.processes.running()):
            self.env.changes.ledger.note()
        return self.env.changes.ledger.seq

    async def begin_turn(self) -> None:
        """Snapshot the protected files, to tell at the end what the turn changed, and
        note which criteria could run (see the module doc)."""
        if self.done.protected:
            self._before, self._watch = await asyncio.to_thread(self._snapshot)
        cwd = self.env.cwd
        criteria = self.done.criteria
        self._runnable = {
            c.name
            for c in criteria
            if await asyncio.to_thread(runnable, c.command, cwd, self.search_path)
        }

    async def protected_writes(self) -> ProtectedWrites:
        if not self.done.protected:
            return ProtectedWrites()
        after, watch = await asyncio.to_thread(self._snapshot)
        moved = {p for p in self._before.keys() | after.keys() if _moved(self._before, after, p)}
        written = {p for p in self.env.changes.ledger.turn_paths if self._protected(p)}
        capped = watch.capped or self._watch.capped
        return ProtectedWrites(
            tuple(sorted(self.env.display(p) for p in moved | written)),
            Watch(max(watch.files, self._watch.files), capped),
        )

    def _protected(self, path: str) -> bool:
        ctx = MatchContext(self.env.roots, self.env.home)
        return any(path_matches(g, path, ctx, fold=False) for g in self.done.protected)

    def _snapshot(self) -> tuple[Snapshot, Watch]:
        """The protected files' identities, and how many files were looked at (the
        candidates stop at `MAX_WATCHED`, the digests at `MAX_DIGESTED` bytes:
        reaching either counts as stopped there, at the files fully compared)."""
        found: Snapshot = {}
        seen, budget, compared = 0, MAX_DIGESTED, 0
        for path in self._candidates():
            seen += 1
            if not self._protected(path):
                continue
            try:
                st = os.lstat(path)  # a link swapped in is another file
            except OSError:
                continue
            digest = self._digest(path, budget) if budget >= 0 else UNREAD
            if digest == UNREAD and budget >= 0:
                budget, compared = -1, seen - 1  # the rest by their identity alone
            elif budget >= 0:
                budget -= st.st_size
            found[path] = (
                st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                digest,
            )  # fmt: skip
        if budget < 0:
            return found, Watch(compared, True)
        return found, Watch(seen, seen >= MAX_WATCHED)

    def _digest(self, path: str, budget: int) -> str:
        """The sha256 of `path`'s bytes read through the session's reader (no link out,
        no FIFO, never a secret: those are known by why they were not read), or
        `UNREAD` when they would pass what is left of the budget."""
        match self.env.reader.read(path, max_bytes=max(budget, 0)):
            case FileRead(data=data):
                return hashlib.sha256(data).hexdigest()
            case ReadRefused(problem="too_large"):
                return UNREAD
            case ReadRefused(problem=problem):
                return problem

    def _candidates(self) -> Iterator[str]:
        """Files under the protected globs' fixed prefixes (the root for a glob that
        matches at any depth), at most `MAX_WATCHED`."""
        seen = 0
        for base in sorted({_base(g, self.env.cwd) for g in self.done.protected}):
            for folder in walk(base):  # iterative: any depth
                folder.dirs[:] = [d for d in folder.dirs if d not in _SKIP_DIRS]
                for name in folder.files:
                    seen += 1
                    if seen > MAX_WATCHED:
                        return
                    yield os.path.join(folder.path, name)


def _moved(before: Snapshot, after: Snapshot, path: str) -> bool:
    """Whether `path` changed between the snapshots: appeared, vanished, another
    identity, or other content where both sides were digested."""
    was, now = before.get(path), after.get(path)
    if was is None or now is None:
        return was is not now
    if was[:-1] != now[:-1]:
        return True
    return UNREAD not in (was[-1], now[-1]) and was[-1] != now[-1]


_BUILTINS = frozenset({"cd", "test", "[", "true", "false", "echo", "exit", "source", ".", "!"})


def runnable(command: str, cwd: str, search_path: str | None) -> bool:
    """Whether `command`'s program can be found and run now: a path to an executable
    file, a program on `search_path` (the editor's PATH), or a shell builtin. A
    command whose words do not parse, or that starts with a variable assignment, is
    taken to be runnable."""
    try:
        words = shlex.split(command)
    except ValueError:
        return True
    if not words:
        return False
    program = words[0]
    if "=" in program or program in _BUILTINS:
        return True
    if "/" in program:
        path = os.path.join(cwd, program)
        return os.path.isfile(path) and os.access(path, os.X_OK)
    return find_program(program, search_path) is not None


def _base(glob: str, cwd: str) -> str:
    """The directory a protected glob cannot match outside of."""
    fixed: list[str] = []
    parts = glob.split("/")
    for part in parts[:-1]:
        if any(c in part for c in "*?[\\"):
            break
        fixed.append(part)
    if "/" not in glob.rstrip("/"):
        fixed = []
    anchor = "/" if glob.startswith("/") else cwd
    return os.path.realpath(os.path.join(anchor, *fixed))
