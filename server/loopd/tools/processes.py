"""Spawning and killing commands as whole process groups (signals through `loopd.groups`).

Every command starts in its own session, so it leads a process group that holds
everything it forks. Killing is always done to the group, never to the pid: a shell
that is killed alone leaves its children running, still holding the output pipe and
whatever they were writing. The sequence is SIGTERM, a grace period for a clean
exit, then SIGKILL to the group regardless, so a child that ignores SIGTERM dies too.

Waiting goes through the injected `Clock`, which is what makes timeouts and grace
periods testable without spending real seconds.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import subprocess
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from loopd.engine.ports import Clock
from loopd.groups import signal_group
from loopd.sandbox.base import PreparedCommand

log = logging.getLogger(__name__)


class Spawned(asyncio.SubprocessProtocol):
    """One spawned command, seen through asyncio's protocol callbacks.

    Not `asyncio.subprocess.Process`: its `wait()` returns only once the output pipe
    has closed too, and a grandchild holding the pipe would then hide the leader's
    exit. `process_exited` fires on the leader's exit alone. Output is queued as
    decoded text; reading pauses while too much of it waits for the consumer.
    """

    def __init__(self) -> None:
        self.exited = asyncio.Event()
        self.output: asyncio.Queue[str | None] = asyncio.Queue()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.transport: asyncio.SubprocessTransport | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if text := self._decoder.decode(data):
            self.output.put_nowait(text)
        if self.output.qsize() >= MAX_QUEUED and not self._paused:
            self._reading(pause=True)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if tail := self._decoder.decode(b"", final=True):
            self.output.put_nowait(tail)
        self.output.put_nowait(None)

    def process_exited(self) -> None:
        self.exited.set()

    @property
    def pid(self) -> int:
        assert self.transport is not None
        return self.transport.get_pid()

    @property
    def returncode(self) -> int | None:
        assert self.transport is not None
        return self.transport.get_returncode()

    async def wait(self) -> int | None:
        await self.exited.wait()
        return self.returncode

    async def pump(self, on_output: Callable[[str], Awaitable[None]]) -> None:
        """Hand all output to `on_output`, in order, until EOF. Whatever queued up
        while the consumer was busy goes in one call, so a slow consumer is called
        less often rather than falling further behind."""
        eof = False
        while not eof:
            pieces = [await self.output.get()]
            while not self.output.empty():
                pieces.append(self.output.get_nowait())
            eof = pieces[-1] is None
            if self._paused:
                self._reading(pause=False)
            if text := "".join(p for p in pieces if p is not None):
                await on_output(text)

    def _reading(self, *, pause: bool) -> None:
        assert self.transport is not None
        pipe = self.transport.get_pipe_transport(1)
        if isinstance(pipe, asyncio.ReadTransport):
            if pause:
                pipe.pause_reading()
            else:
                pipe.resume_reading()
            self._paused = pause


MAX_QUEUED = 64  # chunks of output waiting for the consumer before reading pauses


_SPAWNED: weakref.WeakSet[Spawned] = weakref.WeakSet()
_UNCONTAINED: list[bool] = []  # set once for good: a command ran whose tree may outlive it


def started(prepared: PreparedCommand) -> None:
    """Note a command loopd starts, here or in the editor's terminal. One that is not
    `contained` may leave a process behind (`setsid swapper &`) in a session and
    process group of its own, which no later look can find: from then on this
    process counts as having a command alive, for good (fail-closed)."""
    if not prepared.contained and not _UNCONTAINED:
        _UNCONTAINED.append(True)


def commands_alive() -> bool:
    """Whether a command loopd started (for any session: a tool's, a background one,
    a child agent's terminal) may still be running: its leader has not exited, its
    process group still has members, or some command ran uncontained (`started`).
    What `loopd.acp.client_io` asks before it hands a path to the editor: such a
    command could swap the path meanwhile."""
    return bool(_UNCONTAINED) or any(_group_alive(child) for child in list(_SPAWNED))


def _group_alive(child: Spawned) -> bool:
    if child.transport is None or child.returncode is None:
        return True
    try:
        os.killpg(child.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member runs as another user: still a member
        return True
    return True


async def spawn(prepared: PreparedCommand, stdout: int) -> Spawned:
    """Start `prepared` as the leader of a new session and process group, stdin closed,
    stderr merged into `stdout` (a pipe or a file descriptor). It counts in
    `commands_alive` until its group is empty."""
    child = Spawned()
    started(prepared)
    _SPAWNED.add(child)  # before it starts: counted from its first instant
    try:
        await asyncio.get_running_loop().subprocess_exec(
            lambda: child,
            *prepared.argv,
            cwd=prepared.cwd,
            env=dict(prepared.env),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=prepared.preexec,
        )
    except BaseException:
        _SPAWNED.discard(child)
        raise
    return child


async def first_of(work: Awaitable[object], clock: Clock, seconds: float) -> bool:
    """Await `work` for at most `seconds` of `clock` time. True if it finished first.
    The loser is cancelled, and so is everything if the caller is."""
    work_task = asyncio.ensure_future(work)
    timer = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait({work_task, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        if not work_task.done():
            work_task.cancel()
    return work_task.done() and not work_task.cancelled()


async def stop(child: Spawned, clock: Clock, grace: float) -> None:
    """Terminate the group `child` leads: SIGTERM, up to `grace` seconds for the
    leader to exit, then SIGKILL to the group whatever happened (children that
    ignored SIGTERM or outlived the leader), then reap the leader. The SIGKILL is in
    a `finally` so a second cancellation during the grace still kills.

    The leader's own children are read first and killed with their groups too: a
    sandbox launcher (bwrap) runs the command under a child that starts a session of
    its own (`--new-session`), out of the leader's group, and that ignores SIGTERM
    from outside (it is its pid namespace's init). It dies with the launcher only
    once it has set its parent-death signal, so a launcher stopped just after it
    started would otherwise leave it, and the command, running."""
    children = _children(child.pid)
    try:
        if child.returncode is None:
            signal_group(child.pid, signal.SIGTERM)
            await first_of(child.wait(), clock, grace)
    finally:
        signal_group(child.pid, signal.SIGKILL)
        for pid, started in children:
            if _started(pid) == started:  # still that process, not a reused pid
                signal_group(pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
    await child.wait()


def _children(pid: int) -> tuple[tuple[int, str], ...]:
    """The direct children of `pid` with their start times (none when the kernel
    does not list children)."""
    found: list[tuple[int, str]] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as listed:
                found += [(int(p), _started(int(p))) for p in listed.read().split()]
    except (OSError, ValueError):
        pass
    return tuple((p, t) for p, t in found if t)


def _started(pid: int) -> str:
    """The start time of `pid` (its /proc stat field 22), "" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


@dataclass(frozen=True, slots=True)
class Finished:
    exit_code: int | None  # None when the command was killed on timeout
    timed_out: bool


async def run_captured(
    prepared: PreparedCommand,
    *,
    clock: Clock,
    time_limit: float,
    grace: float,
    on_output: Callable[[str], Awaitable[None]],
) -> Finished:
    """Run a command to completion, passing its decoded output to `on_output` as it
    arrives. On timeout or cancellation the whole group is stopped. When the leader
    exits on its own, stragglers it left in its group are killed: a foreground
    command owns nothing after it returns, and a straggler holding the pipe would
    otherwise hang the call (long-lived processes are what `background` is for).
    Only a process that left the group (setsid) and keeps the pipe open can still
    hold the call, until it closes the pipe."""
    child = await spawn(prepared, subprocess.PIPE)
    pump = asyncio.ensure_future(child.pump(on_output))
    try:
        finished = await first_of(child.wait(), clock, time_limit)
        if not finished:
            await stop(child, clock, grace)
        signal_group(child.pid, signal.SIGKILL)
        await pump
    except BaseException:
        pump.cancel()
        await asyncio.shield(stop(child, clock, grace))
        raise
    finally:
        assert child.transport is not None
        child.transport.close()
    return Finished(child.returncode if finished else None, timed_out=not finished)


@dataclass(frozen=True, slots=True)
class BackgroundProcess:
    id: str
    command: str
    pid: int
    log_path: str


class BackgroundProcesses:
    """The session's long-lived commands. Owned by the `ToolEnv`, so a process dies
    with the session as a consequence of ownership, not of a cleanup someone must
    remember: closing the registry stops every group it started."""

    def __init__(self, clock: Clock, grace: float) -> None:
        self._clock = clock
        self._grace = grace
        self._procs: dict[str, tuple[BackgroundProcess, Spawned]] = {}
        self._closed = False
        self._started = 0

    async def start(
        self, prepared: PreparedCommand, command: str, log_dir: str
    ) -> BackgroundProcess:
        """Start `prepared` with its output written to `<log_dir>/<id>.log`."""
        if self._closed:
            raise RuntimeError("the session is closed; no new background process can start")
        self._started += 1
        process_id = f"bg{self._started}"
        log_path = os.path.join(log_dir, f"{process_id}.log")
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            proc = await spawn(prepared, fd)
        finally:
            os.close(fd)
        entry = BackgroundProcess(process_id, command, proc.pid, log_path)
        self._procs[entry.id] = (entry, proc)
        return entry

    def running(self) -> tuple[BackgroundProcess, ...]:
        return tuple(e for e, p in self._procs.values() if p.returncode is None)

    async def aclose(self) -> None:
        """Stop every group, running or not (a leader that exited may have left
        children). Idempotent."""
        self._closed = True
        procs = [p for _, p in self._procs.values()]
        self._procs.clear()
        results = await asyncio.gather(*(self._stop(p) for p in procs), return_exceptions=True)
        for r in results:
            if isinstance(r, Exception):
                log.warning("stopping a background process failed: %r", r)

    async def _stop(self, child: Spawned) -> None:
        try:
            await stop(child, self._clock, self._grace)
        finally:
            assert child.transport is not None
            child.transport.close()
