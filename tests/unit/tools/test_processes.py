"""Stopping a command stops what it started directly, even a child that left its
group for a session of its own (as bwrap's pid-namespace init does), which a group
kill alone misses."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from loopd.sandbox.base import PreparedCommand
from loopd.testing.processes import ended, running
from loopd.tools import processes
from loopd.tools.env import SystemClock


@pytest.fixture
def cwd(tmp_path: Path) -> str:
    return str(tmp_path)


async def test_stop_kills_a_child_in_a_session_of_its_own(cwd: str) -> None:
    # the child says "ready" only once it runs in its own session
    script = "setsid sh -c 'echo ready; exec sleep 4321.5' & wait"
    prepared = PreparedCommand(("bash", "-c", script), {"PATH": os.environ["PATH"]}, cwd)
    child = await processes.spawn(prepared, subprocess.PIPE)
    try:
        assert await child.output.get() == "ready\n"
        assert running("4321.5")
        await processes.stop(child, SystemClock(), grace=0.5)
    finally:
        assert child.transport is not None
        child.transport.close()
    assert await ended("4321.5")
