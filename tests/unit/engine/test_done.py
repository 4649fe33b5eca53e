"""Done criteria and the seal, through whole turns: a scripted model, the real file
and shell tools over a temporary workspace, and criteria run as real commands."""

from __future__ import annotations

import asyncio
import mmap
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from loopd.engine.done import Criterion, DoneSet, DoneState, progressed, seal_of
from loopd.engine.limits import Limits
from loopd.engine.loop import Engine, EngineConfig
from loopd.engine.steer import STEER_PREFIX, SteerBox
from loopd.protocol.events import Prompt, TextBlock, ToolCallStarted, VerificationUpdated
from loopd.protocol.events_wire import to_wire
from loopd.protocol.turns import Outcome
from loopd.protocol.verification import CriterionResult, Verification, Watch
from loopd.testing.fakes import RecordingEmitter, Reply, ScriptedProvider
from loopd.tools import criteria
from loopd.tools.criteria import MAX_WATCHED, SandboxedDone
from loopd.tools.env import ToolEnv
from loopd.tools.registry import ToolRegistry
from tests.unit.engine.test_loop import Rig


class TimeoutClock:
    """Sleeps end at once when `instant`, else never: a criterion finishes on its own
    unless the test wants its timeout to fire."""

    def __init__(self, instant: bool = False) -> None:
        self.instant = instant

    def monotonic(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        if not self.instant:
            await asyncio.Event().wait()
        await asyncio.sleep(0)


@dataclass
class Workspace:
    root: Path
    env: ToolEnv
    emitter: RecordingEmitter

    def engine(self, provider: ScriptedProvider, done: DoneSet, limits: Limits) -> Engine:
        self.checks = SandboxedDone(self.env, done)
        rig = Rig(provider, ToolRegistry(self.env), self.emitter, clock=self.env.clock)
        rig.limits = limits
        engine = rig.engine()
        engine.ports.done = self.checks
        return engine

    async def turn(
        self,
        done: DoneSet,
        *replies: Reply,
        limits: Limits | None = None,
        engine: Engine | None = None,
    ) -> Outcome:
        engine = engine or self.engine(ScriptedProvider.of(*replies), done, limits or Limits())
        self.env.changes.begin_turn()  # what the runtime's parts do before each turn
        return await engine.run(Prompt((TextBlock("work"),)))


@pytest.fixture
async def ws(tmp_path: Path) -> AsyncIterator[Workspace]:
    env = ToolEnv(roots=(str(tmp_path),), clock=TimeoutClock())
    yield Workspace(tmp_path, env, RecordingEmitter())
    await env.aclose()


def write(call_id: str, path: str, content: str) -> Reply:
    return Reply(tools=[(call_id, "write", {"path": path, "content": content})])


def bash(call_id: str, command: str) -> Reply:
    return Reply(tools=[(call_id, "bash", {"command": command})])


def seal(outcome: Outcome) -> Verification:
    assert outcome.verification is not None
    return outcome.verification


HAS_GOOD = Criterion("content", "grep -q good a.txt")


# -- the pure parts --------------------------------------------------------------------


def test_progress_is_strict_shrinkage() -> None:
    assert progressed(["a", "b"], ["a"])
    assert not progressed(["a"], ["a"])
    assert not progressed(["a"], ["a", "b"])  # a regression is not movement
    assert not progressed(["a"], ["b"])  # a swap neither


def test_seal_of_every_state() -> None:
    met = (CriterionResult("t", "met"),)
    unmet = (CriterionResult("t", "unmet"), CriterionResult("u", "met"))
    gone = (CriterionResult("t", "unavailable"),)
    assert seal_of(None, changed=False, stale=False) == "clean"
    assert seal_of(met, changed=True, stale=False) == "passed"
    assert seal_of(unmet, changed=True, stale=False) == "failed"
    assert seal_of(met, changed=True, stale=True) == "stale"
    assert seal_of(gone, changed=True, stale=False) == "unavailable"
    assert seal_of(None, changed=True, stale=False) == "unavailable"


def test_stalls_count_cycles_without_progress() -> None:
    done = DoneSet((Criterion("a", "x"), Criterion("b", "y")), enabled=True, max_stall_cycles=2)
    state = DoneState()
    both = (CriterionResult("a", "unmet"), CriterionResult("b", "unmet"))
    one = (CriterionResult("a", "met"), CriterionResult("b", "unmet"))
    assert state.record(1, both, done).reenter is not None
    assert state.record(2, one, done).reenter is not None  # progress
    assert state.record(3, one, done).reenter is not None  # first stall
    verdict = state.record(4, one, done)
    assert verdict.incomplete and verdict.reenter is None


# -- whole turns -----------------------------------------------------------------------


async def test_no_write_is_clean_and_runs_nothing(ws: Workspace) -> None:
    outcome = await ws.turn(DoneSet((HAS_GOOD,)), Reply(text="just answering"))
    assert seal(outcome).seal == "clean"
    assert not ws.emitter.of(ToolCallStarted)
    assert "verification" not in ws.emitter.text.lower()  # nothing to say


async def test_criteria_that_pass_seal_the_turn_passed(ws: Workspace) -> None:
    outcome = await ws.turn(
        DoneSet((HAS_GOOD,)), write("w1", "a.txt", "good\n"), Reply(text="done")
    )
    verification = seal(outcome)
    assert verification.seal == "passed"
    assert [(c.name, c.state, c.exit_code) for c in verification.criteria] == [
        ("content", "met", 0)
    ]
    checks = [e for e in ws.emitter.of(ToolCallStarted) if e.title.startswith("Check")]
    assert [c.title for c in checks] == ["Check content: `grep -q good a.txt`"]
    assert ws.emitter.of(VerificationUpdated) == [VerificationUpdated(verification)]
    wire = to_wire(VerificationUpdated(verification))
    assert wire["sessionUpdate"] == "session_info_update"
    assert wire["_meta"]["loopd"]["verification"]["seal"] == "passed"
    assert "Verification passed" in ws.emitter.text


async def test_unmet_criteria_only_reported_when_reentry_is_off(ws: Workspace) -> None:
    outcome = await ws.turn(DoneSet((HAS_GOOD,)), write("w1", "a.txt", "bad\n"), Reply(text="ok"))
    verification = seal(outcome)
    assert verification.seal == "failed" and verification.unmet == ("content",)
    assert verification.failed and not verification.incomplete
    assert outcome.iterations == 2  # no re-entry


async def test_failing_criteria_stall_into_incomplete(ws: Workspace) -> None:
    done = DoneSet((HAS_GOOD,), enabled=True, max_stall_cycles=2)
    provider = ScriptedProvider.of(
        write("w1", "a.txt", "bad\n"),
        Reply(text="done!"),
        write("w2", "a.txt", "still bad\n"),
        Reply(text="done now"),
        Reply(text="I give up"),  # writes nothing: judged on the same results
    )
    outcome = await ws.turn(done, engine=ws.engine(provider, done, Limits()))
    verification = seal(outcome)
    assert verification.incomplete and verification.seal == "failed"
    assert verification.unmet == ("content",)
    assert verification.cycles == 2
    assert outcome.stop_reason == "end_turn"
    reentries = [
        m.text
        for m in provider.requests[-1].messages
        if m.role == "user" and m.text.startswith("[loopd] Not done")
    ]
    assert len(reentries) == 2 and "## content (exit code 1)" in reentries[0]
    checks = [e for e in ws.emitter.of(ToolCallStarted) if e.title.startswith("Check")]
    assert len(checks) == 2  # the third cycle wrote nothing: no re-run
    assert "Stopped, incomplete: content still unmet" in ws.emitter.text
    assert "Verification incomplete: unmet content" in ws.emitter.text


async def test_progress_keeps_the_turn_going_until_met(ws: Workspace) -> None:
    done = DoneSet(
        (Criterion("a", "test -f a.txt"), Criterion("b", "test -f b.txt")),
        enabled=True,
        max_stall_cycles=1,
    )
    outcome = await ws.turn(
        done,
        engine=ws.engine(
            ScriptedProvider.of(
                write("w0", "c.txt", "x"),
                Reply(text="done"),  # check 1: a and b unmet -> re-enter
                write("w1", "a.txt", "x"),
                Reply(text="done"),  # check 2: b unmet, progress -> re-enter
                write("w2", "b.txt", "x"),
                Reply(text="done"),  # check 3: met
            ),
            done,
            Limits(),
        ),
    )
    verification = seal(outcome)
    assert verification.seal == "passed" and not verification.incomplete
    assert verification.cycles == 2


async def test_unavailable_criteria_never_reenter(ws: Workspace) -> None:
    done = DoneSet((Criterion("lint", "no-such-linter-xyz --check"),), enabled=True)
    outcome = await ws.turn(done, write("w1", "a.txt", "x"), Reply(text="done"))
    verification = seal(outcome)
    assert verification.seal == "unavailable"
    assert verification.criteria[0].state == "unavailable"
    assert outcome.iterations == 2


async def test_a_criterion_that_times_out_is_unmet_and_killed(ws: Workspace) -> None:
    ws.env.clock = TimeoutClock(instant=True)
    done = DoneSet((Criterion("slow", "sleep 30"),), timeout_seconds=5)
    outcome = await ws.turn(done, write("w1", "a.txt", "x"), Reply(text="done"))
    verification = seal(outcome)
    assert verification.seal == "failed"
    result = verification.criteria[0]
    assert result.state == "unmet" and result.exit_code is None
    assert "timed out after 5 s" in result.output


async def test_protected_writes_are_reported_from_tools_and_commands(ws: Workspace) -> None:
    (ws.root / "tests").mkdir()
    (ws.root / "tests" / "test_old.py").write_text("assert True\n")
    done = DoneSet((Criterion("t", "true"),), protected=("tests/**",))
    outcome = await ws.turn(
        done,
        write("w1", "tests/test_new.py", "assert 1\n"),
        bash("b1", "echo '# weakened' >> tests/test_old.py"),
        write("w2", "src.py", "x = 1\n"),
        Reply(text="done"),
    )
    verification = seal(outcome)
    assert verification.protected_writes == ("tests/test_new.py", "tests/test_old.py")
    assert verification.to_wire()["protectedWrites"] == list(verification.protected_writes)
    assert "protected files written: tests/test_new.py, tests/test_old.py" in ws.emitter.text


PROTECT_TESTS = DoneSet((Criterion("t", "true"),), protected=("tests/**",))
FAKED = {
    "a same-size rewrite, its times put back": (
        "touch -r tests/test_old.py times && printf 'assert Fals\\n' > tests/test_old.py"
        " && touch -r times tests/test_old.py"
    ),
    "a rename over it, of a file with its size and times": (
        "printf 'assert Fals\\n' > new && touch -r tests/test_old.py new"
        " && mv new tests/test_old.py"
    ),
    "a hard link swapped in, its times put back": (
        "printf 'assert Fals\\n' > elsewhere && touch -r tests/test_old.py elsewhere"
        " && ln -f elsewhere tests/test_old.py"
    ),
}


@pytest.mark.parametrize("command", FAKED.values(), ids=FAKED.keys())
async def test_a_protected_write_with_its_traces_put_back_is_still_seen(
    ws: Workspace, command: str
) -> None:
    """Size and mtime are the command's to set; the inode and ctime are not."""
    (ws.root / "tests").mkdir()
    (ws.root / "tests" / "test_old.py").write_text("assert True\n")  # as long as "assert Fals"
    outcome = await ws.turn(PROTECT_TESTS, bash("b1", command), Reply(text="done"))
    assert (ws.root / "tests" / "test_old.py").read_text() == "assert Fals\n"
    verification = seal(outcome)
    assert verification.protected_writes == ("tests/test_old.py",)
    assert "protected files written: tests/test_old.py" in ws.emitter.text


async def test_a_store_through_a_mapping_made_before_the_snapshot_is_seen(
    ws: Workspace,
) -> None:
    """Not in the issue: a process holding a shared mapping of a protected file from
    before the turn (a `setsid` child of an earlier command, which no look finds)
    writes through it after the snapshot. The page was made writable before, so the
    store moves no timestamp: size, mtime, ctime and inode all stay as they were."""
    test = ws.root / "tests" / "test_old.py"
    test.parent.mkdir()
    test.write_text("assert True\n")
    checks = SandboxedDone(ws.env, PROTECT_TESTS)
    with test.open("r+b") as handle, mmap.mmap(handle.fileno(), 0) as mapping:
        mapping[0:1] = b"a"  # the write fault, before the turn: the page is writable now
        await checks.begin_turn()
        before = os.lstat(test)
        mapping[7:12] = b"Fals\n"
        after = os.lstat(test)
        written = await checks.protected_writes()
    assert test.read_text() == "assert Fals\n"
    assert (before.st_ino, before.st_size, before.st_mtime_ns, before.st_ctime_ns) == (
        after.st_ino, after.st_size, after.st_mtime_ns, after.st_ctime_ns,
    )  # fmt: skip
    assert written.paths == ("tests/test_old.py",)
    assert written.watch == Watch(1, capped=False)


async def test_a_write_through_a_protected_link_to_its_target_is_seen(ws: Workspace) -> None:
    """Not in the issue: a protected path that is a symlink (the repository's own, to
    a fixture elsewhere in it). A command writing the target moves nothing of the
    link itself, size, times or inode; what the protected path reads changes."""
    (ws.root / "tests").mkdir()
    (ws.root / "fixtures").mkdir()
    (ws.root / "fixtures" / "expected.txt").write_text("42\n")
    (ws.root / "tests" / "expected.txt").symlink_to("../fixtures/expected.txt")
    outcome = await ws.turn(
        PROTECT_TESTS, bash("b1", "printf '41\\n' > fixtures/expected.txt"), Reply(text="done")
    )
    assert (ws.root / "tests" / "expected.txt").read_text() == "41\n"
    assert seal(outcome).protected_writes == ("tests/expected.txt",)


async def test_past_its_byte_budget_the_check_says_where_it_stopped(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digests stop at `MAX_DIGESTED` bytes: the files before are compared whole,
    the rest by their identity, and the seal says it stopped."""
    monkeypatch.setattr(criteria, "MAX_DIGESTED", 10)
    (ws.root / "tests").mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (ws.root / "tests" / name).write_text("x = 1\n")  # 6 bytes: a fits, b does not
    checks = SandboxedDone(ws.env, PROTECT_TESTS)
    await checks.begin_turn()
    (ws.root / "tests" / "c.py").write_text("x = 2\n")  # a new ctime: seen all the same
    written = await checks.protected_writes()
    assert written.paths == ("tests/c.py",)
    assert written.watch == Watch(1, capped=True)


async def test_the_check_for_protected_writes_says_where_it_stopped(ws: Workspace) -> None:
    (ws.root / "tests").mkdir()
    for n in range(MAX_WATCHED):
        (ws.root / "tests" / f"t{n}.py").touch()
    outcome = await ws.turn(PROTECT_TESTS, write("w1", "a.txt", "x"), Reply(text="done"))
    verification = seal(outcome)
    assert verification.watch == Watch(MAX_WATCHED, capped=True)
    assert verification.to_wire()["protectedWatched"] == {"files": MAX_WATCHED, "capped": True}
    assert f"only the first {MAX_WATCHED:,} files were checked" in ws.emitter.text


async def test_an_uncapped_check_says_how_much_it_compared(ws: Workspace) -> None:
    (ws.root / "tests").mkdir()
    (ws.root / "tests" / "test_old.py").write_text("assert True\n")
    outcome = await ws.turn(PROTECT_TESTS, write("w1", "a.txt", "x"), Reply(text="done"))
    verification = seal(outcome)
    assert verification.watch == Watch(1, capped=False)  # tests/test_old.py alone
    assert verification.protected_writes == ()
    assert "were checked" not in ws.emitter.text


async def test_a_write_after_the_last_check_is_stale(ws: Workspace) -> None:
    done = DoneSet((Criterion("t", "true"),))
    engine = ws.engine(
        ScriptedProvider.of(
            write("w1", "a.txt", "x"),
            Reply(text="done"),  # checked: passed
            write("w2", "a.txt", "y"),  # the iteration cap ends the turn unchecked
        ),
        done,
        Limits(max_iterations=1),
    )
    engine.config = EngineConfig(model="m")
    first = await ws.turn(done, engine=engine)
    assert seal(first).seal == "passed"
    engine.config = EngineConfig(model="m", limits=Limits(max_iterations=1))
    second = await ws.turn(done, engine=engine)
    assert second.stop_reason == "max_turn_requests"
    assert seal(second).seal == "stale"
    assert "Verification stale" in ws.emitter.text


async def test_a_read_only_turn_keeps_the_last_seal(ws: Workspace) -> None:
    done = DoneSet((HAS_GOOD,))
    engine = ws.engine(
        ScriptedProvider.of(
            write("w1", "a.txt", "bad"), Reply(text="done"), bash("b1", "ls"), Reply(text="hm")
        ),
        done,
        Limits(),
    )
    assert seal(await ws.turn(done, engine=engine)).seal == "failed"
    again = await ws.turn(done, engine=engine)
    assert seal(again).seal == "failed"  # `ls` writes nothing; the failure stands
    checks = [e for e in ws.emitter.of(ToolCallStarted) if e.title.startswith("Check")]
    assert len(checks) == 1


async def test_without_criteria_a_write_is_unavailable_and_not_said(ws: Workspace) -> None:
    outcome = await ws.turn(DoneSet(), write("w1", "a.txt", "x"), Reply(text="done"))
    assert seal(outcome).seal == "unavailable"
    assert ws.emitter.of(VerificationUpdated) == [VerificationUpdated(seal(outcome))]
    assert ws.emitter.text == "done"


async def test_steering_said_while_the_criteria_run_is_read_in_the_same_turn(
    ws: Workspace,
) -> None:
    """The criterion holds until the test lets it go (two FIFOs, no clock): what the
    person says meanwhile is answered by this turn, not carried to the next."""
    os.mkfifo(ws.root / "started")
    os.mkfifo(ws.root / "go")
    done = DoneSet((Criterion("gate", "echo x > started && read line < go"),))
    provider = ScriptedProvider.of(
        write("w1", "a.txt", "good\n"), Reply(text="done"), Reply(text="and the test too")
    )
    engine = ws.engine(provider, done, Limits())
    box = engine.ports.steer = SteerBox()
    ws.env.changes.begin_turn()
    turn = asyncio.create_task(engine.run(Prompt((TextBlock("work"),))))
    await asyncio.to_thread((ws.root / "started").read_text)  # the criterion runs
    assert box.push("add a test as well")
    await asyncio.to_thread((ws.root / "go").write_text, "go\n")
    async with asyncio.timeout(30):
        outcome = await turn
    assert outcome.stop_reason == "end_turn"
    assert len(provider.requests) == 3
    assert provider.requests[2].messages[-1].text == f"{STEER_PREFIX}\nadd a test as well"
    assert engine.history[-1].text == "and the test too"


@pytest.mark.parametrize("breaking", ["rm check.sh", "chmod -x check.sh"])
async def test_a_criterion_the_turn_made_unrunnable_is_unmet_not_unavailable(
    ws: Workspace, breaking: str
) -> None:
    """It could run when the turn began; deleting it or `chmod -x` (exit 127/126) is
    breaking the measurement, which must not end the turn as if it could not tell."""
    script = ws.root / "check.sh"
    script.write_text("#!/bin/sh\nexit 1\n")
    script.chmod(0o755)
    done = DoneSet((Criterion("check", "./check.sh"),))
    outcome = await ws.turn(done, bash("b1", breaking), Reply(text="done"))
    verification = seal(outcome)
    assert verification.criteria[0].state == "unmet"
    assert verification.criteria[0].exit_code in (126, 127)
    assert "could run when the turn began" in verification.criteria[0].output
    assert verification.seal == "failed"


async def test_one_met_and_one_unavailable_is_not_passed(ws: Workspace) -> None:
    done = DoneSet((HAS_GOOD, Criterion("lint", "no-such-linter-xyz --check")))
    outcome = await ws.turn(done, write("w1", "a.txt", "good\n"), Reply(text="done"))
    verification = seal(outcome)
    assert [c.state for c in verification.criteria] == ["met", "unavailable"]
    assert verification.seal == "unavailable"
