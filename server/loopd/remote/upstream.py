"""One remote connection's link to the daemon: pipes of `loopd serve`'s own, handed
over as a forwarder hands an editor's (`loopd.daemon.forward.handover`).

The daemon serves them as it serves any editor: a connection with `loopd serve`'s
environment (the server's credentials and config) and the first workspace root as
its cwd, over the one session table every editor shares. What it writes to the
connection's stderr goes to `loopd serve`'s log, tagged with the connection.

A connection speaks ACP (a JSON message per line) or LSP (`Content-Length` frames,
`loopd.streams.frames`); either way its messages here are JSON objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
from collections.abc import Mapping
from typing import Any, Literal

from loopd.daemon.forward import handover
from loopd.daemon.place import place_of
from loopd.protocol.jsonvalues import loads_bounded
from loopd.streams.frames import MARKER, MAX_HEADER_LINE, FrameReader, frame
from loopd.streams.lines import LineReader

log = logging.getLogger(__name__)

MAX_LINE = 64 * 1024 * 1024  # what the daemon writes on one line (a big tool result)

Speaks = Literal["acp", "lsp"]


class Unreachable(Exception):
    """The daemon would not serve the connection."""


class Upstream:
    """Messages to and from the daemon on one connection's pipes."""

    def __init__(
        self,
        control: socket.socket,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        speaks: Speaks = "acp",
    ) -> None:
        self._control = control
        self._speaks = speaks
        if speaks == "lsp":
            self._lines = LineReader(reader, MAX_HEADER_LINE, resync=MARKER)
        else:
            self._lines = LineReader(reader, MAX_LINE)
        self._frames = FrameReader(self._lines)
        self._writer = writer
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def open(
        cls, env: Mapping[str, str], cwd: str, tag: str, speaks: Speaks = "acp"
    ) -> Upstream:
        """A connection of the daemon's (started if none runs) speaking `speaks`;
        `Unreachable` if not."""
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        try:
            place = place_of(env)
            place.prepare()
            fds = (stdin_r, stdout_w, stderr_w)
            control = await asyncio.to_thread(handover, place, speaks, dict(env), cwd, fds)
        except Exception as err:
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            raise Unreachable(f"the loopd daemon could not be reached: {err}") from err
        finally:
            for fd in (stdin_r, stdout_w, stderr_w):
                os.close(fd)  # the daemon has its own copies now
        if control is None:
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            raise Unreachable(f"the loopd daemon would not serve (see {place.log})")
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(stdout_r, "rb", 0)
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(stdin_w, "wb", 0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        upstream = cls(control, reader, writer, speaks)
        upstream._tasks.append(asyncio.create_task(_log_stderr(stderr_r, tag)))
        return upstream

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message; `ConnectionError` once the daemon's end is gone."""
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        self._writer.write(frame(body) if self._speaks == "lsp" else body + b"\n")
        await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The daemon's next message; None when it ended the connection."""
        while True:
            line = await (self._frames.next() if self._speaks == "lsp" else self._lines.line())
            if line is None:
                return None
            if not isinstance(line, bytes) or not line.strip():
                continue  # an overlong line, a frame that cannot be read
            with contextlib.suppress(ValueError):
                message = loads_bounded(line)
                if isinstance(message, dict):
                    return message
            log.warning("the daemon wrote a line that is not a JSON object; skipped")

    async def close(self) -> None:
        """End the connection: the daemon sees its stdin close (it cancels what the
        connection ran and detaches its sessions) and the control socket go."""
        with contextlib.suppress(OSError, RuntimeError):
            self._writer.close()
        self._control.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def _log_stderr(fd: int, tag: str) -> None:
    """The daemon's lines for this connection, into `loopd serve`'s log (drained, so
    the daemon never blocks writing them)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0)
    )
    try:
        while line := await reader.readline():
            log.info("%s: %s", tag, line.decode(errors="replace").rstrip())
    finally:
        transport.close()
