"""`loopd.groups.stop_group`: a child and everything in its process group end, the
leader is reaped, and the group's SIGKILL comes even once the leader is gone."""

from __future__ import annotations

import asyncio
import sys

from loopd.groups import stop_group
from tests.unit.tools.tooltest import dies

HELPER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"
# The leader starts a helper in its group (deaf to SIGTERM, holding no pipe of
# ours), says its pid, then behaves as `then` says.
_LEADER = """
import signal, subprocess, sys, time
kid = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(kid.pid, flush=True)
{then}
"""
_EXITS_AT_EOF = "sys.stdin.read()"
_DEAF = "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nsys.stdin.read()\ntime.sleep(120)"


async def _leader(then: str) -> tuple[asyncio.subprocess.Process, int]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _LEADER.format(then=then), HELPER,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, int(await proc.stdout.readline())


async def test_a_leader_that_exits_at_eof_takes_what_it_left_running_with_it() -> None:
    proc, helper = await _leader(_EXITS_AT_EOF)
    await stop_group(proc, grace=5)
    assert proc.returncode == 0  # it finished on its own, at EOF
    assert await dies(helper)


async def test_a_leader_deaf_to_eof_and_sigterm_is_killed_with_its_group() -> None:
    proc, helper = await _leader(_DEAF)
    await stop_group(proc, grace=0.2)
    assert proc.returncode == -9
    assert await dies(helper)


async def test_a_caller_cancelled_during_the_grace_still_leaves_nothing_running() -> None:
    proc, helper = await _leader(_DEAF)
    stopping = asyncio.ensure_future(stop_group(proc, grace=60))
    await asyncio.sleep(0.2)  # inside the first grace
    stopping.cancel()
    await asyncio.gather(stopping, return_exceptions=True)
    assert await dies(helper)
    assert await asyncio.wait_for(proc.wait(), 5) == -9
