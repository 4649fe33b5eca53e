"""Done criteria: when a turn may end, and the seal it ends with (seed 000 `Criterion`,
`DoneSet`, `Check`, `Progressed`, `VerificationOf`, `WriteSeq`).

A turn whose model stops calling tools is where an agent most often claims a false
success. So, when the workspace defines done, the criteria run (through the port,
which runs them in the shell tool's sandbox) and:

- with re-entry off (the default) the result is only reported, in the seal;
- with re-entry on, unmet criteria send the turn back with their failing output. It
  goes on while the unmet set strictly shrinks (`progressed`), and after
  `max_stall_cycles` cycles without progress it stops as incomplete. The exit
  condition is progress, not "everything is met": a loop that can only leave on
  green tests teaches the model that the shortest way out is weakening the test.

An unavailable criterion (nothing could run) never provokes re-entry: insisting
would only produce another guess. Writes to protected paths (the paths that ARE the
measurement) are not forbidden; they are reported, never hidden.

Staleness is a COUNT of writes, not a set of paths and not a clock: rewriting a file
already written, after the check, is exactly the case being caught.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from loopd.engine.ports import Emitter
from loopd.protocol.events import AgentMessageChunk, TextBlock, ToolCallStarted, ToolCallUpdated
from loopd.protocol.verification import CriterionResult, ProtectedWrites, Seal, Verification


@dataclass(frozen=True, slots=True)
class Criterion:
    """A condition of done that can be CHECKED: a command and the exit code that
    means met. Prose does not qualify; a criterion judged by the model hands the
    decision about done back to the model."""

    name: str
    command: str
    exit_code: int = 0


@dataclass(frozen=True, slots=True)
class DoneSet:
    """A workspace's definition of done (the `[done]` config table)."""

    criteria: tuple[Criterion, ...] = ()
    protected: tuple[str, ...] = ()
    enabled: bool = False
    timeout_seconds: float = 300.0
    max_stall_cycles: int = 2


class DoneChecks(Protocol):
    """The effectful half of done: running a criterion, counting writes, noticing
    protected ones. `loopd.tools.criteria` implements it over the session's sandbox."""

    @property
    def done(self) -> DoneSet: ...

    @property
    def state(self) -> DoneState:
        """The session's bookkeeping, kept here so it outlives an engine rebuilt by
        `/clear` or a compaction."""
        ...

    async def run(self, criterion: Criterion) -> CriterionResult:
        """Run one criterion with the set's timeout. Never raises but `CancelledError`:
        what could not run is an `unavailable` result saying why."""
        ...

    def write_seq(self) -> int:
        """How many writes the session has made, ever increasing."""
        ...

    async def begin_turn(self) -> None:
        """A turn starts: what is protected now is what its writes are compared to."""
        ...

    async def protected_writes(self) -> ProtectedWrites:
        """The protected paths written since the turn began, sorted, and how far the
        check looked."""
        ...


def progressed(before: Sequence[str], after: Sequence[str]) -> bool:
    """Whether the unmet set shrank strictly. A set that grows, or changes without
    shrinking, is not progress."""
    old, new = set(before), set(after)
    return new < old


def seal_of(criteria: Sequence[CriterionResult] | None, changed: bool, stale: bool) -> Seal:
    """Collapse what the last check found into the seal. `criteria` is None when no
    check ran; `stale` says a write came after the last check."""
    if not changed:
        return "clean"
    if stale:
        return "stale"
    if not criteria:
        return "unavailable"
    states = {c.state for c in criteria}
    if "unmet" in states:
        return "failed"
    return "passed" if "met" in states else "unavailable"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a check at the end of a step means for the turn: `reenter` with this
    text, or end (`incomplete` when it stopped for want of progress)."""

    reenter: str | None = None
    incomplete: bool = False


@dataclass(slots=True)
class DoneState:
    """A session's done bookkeeping. The last check outlives the turn: a turn that
    writes nothing keeps the previous seal, because nothing happened that could
    change it (a read-only question after a failed check is still failed)."""

    checked_seq: int | None = None  # write count when the last check ran
    last: tuple[CriterionResult, ...] | None = None
    # this turn's
    unmet_before: tuple[str, ...] | None = None
    stalls: int = 0
    cycles: int = 0
    incomplete: bool = False

    def begin_turn(self) -> None:
        self.unmet_before, self.stalls, self.cycles, self.incomplete = None, 0, 0, False

    def needs_check(self, seq: int, done: DoneSet) -> bool:
        """Criteria exist and something was written since they last ran."""
        return bool(done.criteria) and seq > 0 and seq != self.checked_seq

    def record(self, seq: int, results: tuple[CriterionResult, ...], done: DoneSet) -> Verdict:
        """Keep a check's results and decide whether the turn goes on."""
        self.checked_seq, self.last = seq, results
        unmet = tuple(sorted(r.name for r in results if r.state == "unmet"))
        if not done.enabled or not unmet:
            return Verdict()
        if self.unmet_before is None or progressed(self.unmet_before, unmet):
            self.stalls = 0
        else:
            self.stalls += 1
        self.unmet_before = unmet
        if self.stalls >= done.max_stall_cycles:
            self.incomplete = True
            return Verdict(incomplete=True)
        self.cycles += 1
        return Verdict(reenter=reentry_text(results, self.cycles, done))

    def verification(self, seq: int, done: DoneSet, protected: ProtectedWrites) -> Verification:
        """The seal now. With criteria, a write the last check did not see (or no check
        at all) is stale; without any, a write is unavailable."""
        stale = bool(done.criteria) and seq > (self.checked_seq or 0)
        return Verification(
            seal=seal_of(self.last, changed=seq > 0, stale=stale),
            criteria=self.last or (),
            protected_writes=protected.paths,
            incomplete=self.incomplete,
            cycles=self.cycles,
            watch=protected.watch,
        )


def reentry_text(results: Sequence[CriterionResult], cycle: int, done: DoneSet) -> str:
    """What the model reads when it is sent back: which criteria are unmet, with their
    output, and that protected paths are the measurement, not the obstacle."""
    lines = [
        f"[loopd] Not done yet (check {cycle}): these criteria of done are not met. "
        "Keep working until they are, then stop."
    ]
    for r in results:
        if r.state == "unmet":
            code = "timed out" if r.exit_code is None else f"exit code {r.exit_code}"
            lines.append(f"\n## {r.name} ({code})\n{r.output.rstrip() or '(no output)'}")
    if done.protected:
        lines.append(
            "\nThese paths are the measurement: "
            + ", ".join(done.protected)
            + ". Change them only when that is the work itself; every write to them is "
            "shown to the user."
        )
    return "\n".join(lines)


async def settle(checks: DoneChecks, emitter: Emitter, new_id: Callable[[str], str]) -> str | None:
    """At a step where the model stopped calling tools: check done if anything was
    written since the last check, and say whether the turn goes on. A re-entered
    turn that wrote nothing since is judged on the same results (running them again
    would find the same), which counts as a cycle without progress."""
    state, seq, done = checks.state, checks.write_seq(), checks.done
    fresh = state.needs_check(seq, done)
    if not fresh and state.unmet_before is None:
        return None
    results = await run_checks(checks, emitter, new_id) if fresh else state.last or ()
    verdict = state.record(seq, results, done)
    unmet = ", ".join(state.unmet_before or ())
    if verdict.reenter is not None:
        note = f"Not done: {unmet} unmet (check {state.cycles}); continuing."
    elif verdict.incomplete:
        note = (
            f"Stopped, incomplete: {unmet} still unmet after "
            f"{done.max_stall_cycles} checks without progress."
        )
    else:
        return None
    await emitter.emit(AgentMessageChunk(f"\n\n{note}\n", new_id("msg"), "note"))
    return verdict.reenter


def _shown(result: CriterionResult) -> str:
    said = f"{result.name}: {result.state}"
    output = result.output.strip("\n")
    return f"{output}\n\n{said}" if output else said


async def run_checks(
    checks: DoneChecks, emitter: Emitter, new_id: Callable[[str], str]
) -> tuple[CriterionResult, ...]:
    """Run every criterion, one after the other (two test suites at once would race
    on the same files), each shown as a command the person can open."""
    results: list[CriterionResult] = []
    for criterion in checks.done.criteria:
        call_id = new_id("check")
        await emitter.emit(
            ToolCallStarted(
                call_id,
                f"Check {criterion.name}: `{criterion.command}`",
                kind="execute",
                status="in_progress",
                raw_input={"command": criterion.command, "criterion": criterion.name},
            )
        )
        result = await checks.run(criterion)
        results.append(result)
        await emitter.emit(
            ToolCallUpdated(
                call_id,
                status="completed" if result.state == "met" else "failed",
                content=(TextBlock(_shown(result)),),
                raw_output={"state": result.state, "exit_code": result.exit_code},
            )
        )
    return tuple(results)
