"""Closing a foreign CLI ends its whole process group: what the CLI started (a tool
process, the npm launcher's child) does not outlive it, even when the CLI itself
exits cleanly at EOF and leaves it behind."""

from __future__ import annotations

import os
import sys

from loopd.runtimes.foreign.jsonl import JsonlProcess
from tests.unit.test_groups import HELPER
from tests.unit.tools.tooltest import dies

CLI = """
import json, subprocess, sys
kid = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps({"helper": kid.pid}), flush=True)
sys.stdin.read()
"""


async def test_a_cli_that_exits_at_eof_takes_what_it_started_with_it() -> None:
    cli = await JsonlProcess.spawn(
        [sys.executable, "-c", CLI, HELPER], cwd="/", env={"PATH": os.defpath}, name="cli"
    )
    first = await anext(cli.messages())
    await cli.close(grace=2)
    assert cli.returncode == 0  # it finished on its own
    assert await dies(first["helper"])
