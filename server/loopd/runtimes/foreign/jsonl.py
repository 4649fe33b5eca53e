"""A child process that speaks one JSON object per line on stdin and stdout.

Both foreign CLIs (Claude Code in stream-json mode, `codex app-server`) use this
framing. This module owns the mechanics every such runtime needs and must get right
once: spawning with a clear error when the binary is missing, line reading with a
generous limit (a tool result can be megabytes on one line), skipping lines that are
not JSON objects (a CLI may print a banner), keeping the tail of stderr for error
messages, and shutting down in bounded time (close stdin, then SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeVar

from loopd.groups import stop_group
from loopd.protocol.errors import RuntimeFailure
from loopd.protocol.jsonvalues import loads_bounded

log = logging.getLogger(__name__)

T = TypeVar("T")

_LINE_LIMIT = 64 * 1024 * 1024
_STDERR_LINES = 40


class JsonlProcess:
    """One running child. `messages()` may be iterated by one reader only."""

    def __init__(self, proc: asyncio.subprocess.Process, name: str) -> None:
        self._proc = proc
        self._name = name
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        self._write_lock = asyncio.Lock()

    @classmethod
    async def spawn(
        cls, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], name: str
    ) -> JsonlProcess:
        """Start `argv`. Raises `RuntimeFailure` naming the binary when it cannot run."""
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                env=dict(env),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=_LINE_LIMIT,
                start_new_session=True,
            )
        except OSError as exc:
            raise RuntimeFailure(f"{name}: cannot start {argv[0]!r}: {exc.strerror}") from exc
        log.debug("%s started (pid %s): %s", name, proc.pid, " ".join(argv))
        return cls(proc, name)

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    @property
    def alive(self) -> bool:
        return self._proc.returncode is None

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    async def exit_report(self, wait: float = 2.0) -> str:
        """Why the process is gone, for the person: waits (bounded) for the exit code
        and the last of stderr, which is where a CLI says what went wrong."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._proc.wait(), wait)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), wait)
        tail = self.stderr_tail().strip()
        code = self._proc.returncode
        head = f"{self._name} exited" + (f" with code {code}" if code is not None else "")
        return f"{head}: {tail[-800:]}" if tail else f"{head}."

    async def send(self, message: Mapping[str, Any]) -> None:
        """Write one line. Raises `RuntimeFailure` when the process has gone away."""
        stdin = self._proc.stdin
        if stdin is None or stdin.is_closing():
            raise RuntimeFailure(await self.exit_report())
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        async with self._write_lock:
            try:
                stdin.write(data)
                await stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise RuntimeFailure(await self.exit_report()) from exc

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        """Yield each JSON object from stdout until EOF."""
        stdout = self._proc.stdout
        assert stdout is not None
        while True:
            try:
                line = await stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                log.warning("%s: dropped an oversized stdout line", self._name)
                continue
            if not line:
                return
            try:
                message = loads_bounded(line)
            except ValueError:
                log.debug("%s: non-JSON stdout line: %.200r", self._name, line)
                continue
            if isinstance(message, dict):
                yield message

    async def close(self, grace: float = 3.0) -> None:
        """Close stdin so the CLI can finish cleanly, then escalate; bounded by ~3x grace."""
        await stop_group(self._proc, grace)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stderr_task, grace)
        self._stderr_task.cancel()

    async def _drain_stderr(self) -> None:
        stderr = self._proc.stderr
        assert stderr is not None
        while line := await stderr.readline():
            text = line.decode(errors="replace").rstrip()
            if text:
                self._stderr.append(text)
                log.debug("%s stderr: %s", self._name, text)


async def wait_while_active(
    result: asyncio.Future[T],
    *,
    activity: Callable[[], int],
    waiting_on_person: Callable[[], bool],
    stall_timeout: float,
) -> T:
    """`result`, or `TimeoutError` once the child has said nothing for `stall_timeout`
    seconds. `activity` counts the child's lines; time spent waiting on the person
    (an open approval) never counts as silence."""
    while True:
        seen = activity()
        try:
            return await asyncio.wait_for(asyncio.shield(result), stall_timeout)
        except TimeoutError:
            if activity() == seen and not waiting_on_person():
                raise
