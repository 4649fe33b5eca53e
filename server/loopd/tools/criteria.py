"""The workspace's done criteria, run for real: `SandboxedDone` is the engine's
`DoneChecks` over one session's `ToolEnv`.

A criterion runs exactly as a `bash` call would (`bash -c COMMAND` in the session's
sandbox, its own process group, the network off, the workspace writable), with the
`[done]` timeout; on timeout the whole group is killed and the criterion is unmet.
A criterion that cannot run at all (the shell cannot be spawned, the command is not
found) is `unavailable`, which never sends the turn back.

Protected writes are noticed two ways, because a shell command's writes have no
path: the paths the file tools wrote, and a before/after snapshot (size, mtime) of
the files the protected globs match, taken when the turn begins.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from loopd.engine.done import Criterion, DoneSet, DoneState
from loopd.policy.commands import is_safe_command
from loopd.policy.rules import MatchContext, path_matches
from loopd.protocol.verification import CriterionResult
from loopd.sandbox.base import CommandSpec
from loopd.tools.env import ToolEnv
from loopd.tools.output import HeadTail
from loopd.tools.processes import run_captured

OUTPUT_CHARS = 8_000  # of a criterion's output, for the model and the person
NOT_FOUND = (126, 127)  # bash: not executable, command not found
MAX_WATCHED = 20_000  # protected files snapshotted per turn, at most
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__"})

Snapshot = dict[str, tuple[int, int]]


@dataclass(eq=False)
class SandboxedDone:
    env: ToolEnv
    done: DoneSet
    home: str = field(default_factory=lambda: os.path.expanduser("~"))
    state: DoneState = field(default_factory=DoneState)
    _before: Snapshot = field(default_factory=dict)

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
        """Snapshot the protected files, to tell at the end what the turn changed."""
        if self.done.protected:
            self._before = await asyncio.to_thread(self._snapshot)

    async def protected_writes(self) -> tuple[str, ...]:
        if not self.done.protected:
            return ()
        after = await asyncio.to_thread(self._snapshot)
        moved = {
            p for p in self._before.keys() | after.keys() if self._before.get(p) != after.get(p)
        }
        written = {p for p in self.env.changes.ledger.turn_paths if self._protected(p)}
        return tuple(sorted(self.env.display(p) for p in moved | written))

    def _protected(self, path: str) -> bool:
        ctx = MatchContext(self.env.roots, self.home)
        return any(path_matches(g, path, ctx, fold=False) for g in self.done.protected)

    def _snapshot(self) -> Snapshot:
        found: Snapshot = {}
        for path in self._candidates():
            if self._protected(path):
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                found[path] = (st.st_size, st.st_mtime_ns)
        return found

    def _candidates(self) -> Iterator[str]:
        """Files under the protected globs' fixed prefixes (the root for a glob that
        matches at any depth), at most `MAX_WATCHED`."""
        seen = 0
        for base in sorted({_base(g, self.env.cwd) for g in self.done.protected}):
            for folder, dirs, files in os.walk(base):
                dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
                for name in files:
                    seen += 1
                    if seen > MAX_WATCHED:
                        return
                    yield os.path.join(folder, name)


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
