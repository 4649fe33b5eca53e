"""A child ACP agent that ends before it answers is a clear failure of the session's
start, naming how it ended, never a ConnectionError out of the runtime."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from loopd.policy.rules import RuleSet
from loopd.protocol.errors import RuntimeFailure
from loopd.runtimes.acp.agent import AcpRuntimeFactory, AcpSettings
from loopd.runtimes.base import RuntimeContext
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover
from tests.unit.runtimes.acp_scripted import probe
from tests.unit.test_groups import HELPER
from tests.unit.tools.tooltest import dies


@pytest.mark.parametrize(
    ("program", "said"),
    [
        ("import sys; sys.exit(3)", "the ACP agent exited (code 3)"),
        ("import os, sys; sys.stdin.readline(); os._exit(5)", "the ACP agent exited (code 5)"),
        ("import os, time; os.close(1); time.sleep(30)", "the ACP agent closed its connection"),
    ],
    ids=["before-reading", "after-initialize-arrives", "output-closed"],
)
async def test_an_agent_that_ends_before_it_answers_fails_the_start_clearly(
    tmp_path: Path, program: str, said: str
) -> None:
    assert await failed_start(tmp_path, program) == said


async def test_an_agent_that_closes_its_output_and_lingers_is_stopped_and_reaped(
    tmp_path: Path,
) -> None:
    """Its start fails, and the child does not outlive it: it is stopped and reaped,
    its transport closed (left, it ran on and was found later by the garbage
    collector, after its event loop had closed)."""
    pid_file = tmp_path / "pid"
    program = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
    program += "os.close(1); time.sleep(60)"
    assert await failed_start(tmp_path, program) == "the ACP agent closed its connection"
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # gone, and reaped: not even a zombie
        os.kill(pid, 0)


async def test_what_a_failed_agent_started_in_its_group_ends_with_it(tmp_path: Path) -> None:
    """A child that starts a helper (one that ignores SIGTERM) and then fails its
    start: the helper does not outlive it (stopping the child's pid alone left it)."""
    pid_file = tmp_path / "pid"
    program = (
        "import os, subprocess, sys, time; "
        f"kid = subprocess.Popen([sys.executable, '-c', {HELPER!r}], stdout=subprocess.DEVNULL); "
        f"open({str(pid_file)!r}, 'w').write(str(kid.pid)); os.close(1); time.sleep(60)"
    )
    assert await failed_start(tmp_path, program) == "the ACP agent closed its connection"
    assert await dies(int(pid_file.read_text()))


async def failed_start(tmp_path: Path, program: str) -> str:
    """What opening an ACP runtime whose agent is `python -c program` failed with."""
    settings = AcpSettings(
        sys.executable,
        ("-c", program),
        base_env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        rules=RuleSet(),
        probe=probe,
    )
    context = RuntimeContext(
        "s1", str(tmp_path), (), RecordingEmitter(), ScriptedApprover.of(), {"mode": "ask"}
    )
    with pytest.raises(RuntimeFailure) as failed:
        await AcpRuntimeFactory("agent", settings).open(context)
    return str(failed.value)
