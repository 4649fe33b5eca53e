"""Stopping a child that leads a process group of its own.

Every long-lived program loopd starts (a foreign CLI, a child ACP agent, an MCP
stdio server, a command) is started with `start_new_session`, so the group it leads
holds whatever it forks: the npm launcher's CLI, a tool process, a server's helper.
Signals go to that group, never to the pid alone: a leader stopped by itself
leaves its children running, holding its pipes and whatever they were writing.

`stop_group` is the one way such a child is ended: its stdin is closed so it can
finish on its own; if it has not exited after `grace` seconds the group gets
SIGTERM, and after `grace` more, SIGKILL. The SIGKILL goes to the group whatever
happened, even once the leader has exited (a member that ignored SIGTERM, or one
that outlived its leader), and is sent from a `finally`, so a caller cancelled
during the grace still leaves nothing running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable

from loopd.tasks import first_to_end


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Signal a whole process group; a group that is already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def stop_group(
    proc: asyncio.subprocess.Process,
    grace: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    *,
    eof_first: bool = True,
) -> None:
    """End `proc` and its group (see the module's doc), then reap it; bounded by about
    three times `grace`, counted on `sleep`'s clock. Without `eof_first` the group
    gets SIGTERM at once: a child whose protocol already said goodbye (a closed ACP
    connection) is not waited for twice."""
    try:
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        for sig in (None, signal.SIGTERM) if eof_first else (signal.SIGTERM,):
            if proc.returncode is not None:
                break
            if sig is not None:
                signal_group(proc.pid, sig)
            await first_to_end(proc.wait(), sleep(grace))
    finally:
        signal_group(proc.pid, signal.SIGKILL)
    await first_to_end(proc.wait(), sleep(grace))  # a process that left the group may hold a pipe
