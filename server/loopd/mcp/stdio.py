"""The stdio transport: the server is our child process, one JSON message per line.

The child gets a scrubbed environment (`loopd.sandbox.base.sanitized_env`) with the
editor's variables for this server laid over it: a provider key reaches a server
only when the editor passed it for that server. It runs in its own process group in
the session's working directory, so closing kills the server and whatever it
spawned (npx, uvx and friends start grandchildren). Its stderr is drained to our log
line by line (a full pipe would block it), and the last lines are kept to explain a
server that exits.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import signal
from collections.abc import Mapping
from typing import Any

from loopd.engine.ports import Clock
from loopd.executables import find_program, program_env
from loopd.groups import signal_group, stop_group
from loopd.mcp.config import McpServerConfig
from loopd.mcp.rpc import McpClosed, McpError, RpcPeer
from loopd.protocol.jsonvalues import loads_bounded
from loopd.sandbox.base import sanitized_env
from loopd.tasks import first_to_end

log = logging.getLogger(__name__)

LINE_LIMIT = 32 * 1024 * 1024  # a tools/list or a result can be large


class StdioTransport:
    def __init__(
        self, proc: asyncio.subprocess.Process, peer: RpcPeer, clock: Clock, grace: float
    ) -> None:
        self.proc = proc
        self.peer = peer
        self.clock = clock
        self.grace = grace
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=5)
        self.broken = ""  # why loopd stopped reading the server, when it did
        self._pumps = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._drain_stderr()),
        ]

    @classmethod
    async def spawn(
        cls,
        peer: RpcPeer,
        config: McpServerConfig,
        base_env: Mapping[str, str],
        cwd: str,
        clock: Clock,
        grace: float,
    ) -> StdioTransport:
        """Raises `McpError` when the command cannot be started. `grace`: seconds
        the server gets to exit on close before its group is killed."""
        command = config.command or ""
        env = program_env({**sanitized_env(base_env), **config.env}, (cwd,))
        program = find_program(command, env["PATH"], outside=(cwd,))
        if program is None:  # it runs outside the sandbox: never the workspace's
            raise McpError(
                f"could not start `{command}`: not found on PATH's absolute entries "
                "outside the workspace"
            )
        try:
            proc = await asyncio.create_subprocess_exec(
                program,
                *config.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,
                limit=LINE_LIMIT,
            )
        except OSError as err:
            raise McpError(f"could not start `{command}`: {err.strerror or err}") from err
        return cls(proc, peer, clock, grace)

    def negotiated(self, version: str) -> None:
        pass  # stdio messages carry no version

    async def send(self, message: Mapping[str, Any]) -> None:
        stdin = self.proc.stdin
        if stdin is None or stdin.is_closing():
            raise McpClosed(self.exit_reason())
        try:
            stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
            await stdin.drain()
        except (ConnectionError, BrokenPipeError) as err:
            raise McpClosed(self.exit_reason()) from err

    async def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                if not line.strip():
                    continue
                try:
                    message = loads_bounded(line)
                except ValueError:
                    log.warning("mcp %s: not JSON on stdout: %.200r", self.peer.name, line)
                    continue
                await self.peer.receive(message)
        except ValueError:  # a line over the limit: the stream cannot be read on
            self.broken = f"the server sent a message of more than {LINE_LIMIT:,} bytes"
            log.warning("mcp %s: %s; stopped", self.peer.name, self.broken)
            signal_group(self.proc.pid, signal.SIGKILL)  # the server and what it spawned
        except ConnectionError as err:
            log.warning("mcp %s: stdout failed: %s", self.peer.name, err)
        await first_to_end(self._ended(), self.clock.sleep(self.grace))
        self.peer.close(self.exit_reason())

    async def _ended(self) -> None:
        """The exit code is known and stderr has said all it will (its last line
        explains a crash)."""
        await self.proc.wait()
        await asyncio.shield(self._pumps[1])

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            text = line.decode(errors="replace").rstrip()
            if text:
                self.stderr_tail.append(text)
                log.info("mcp %s stderr: %s", self.peer.name, text)

    def exit_reason(self) -> str:
        if self.broken:
            return self.broken
        code = self.proc.returncode
        said = f": {self.stderr_tail[-1]}" if self.stderr_tail else ""
        if code is None:
            return f"the server closed its output{said}"
        return f"the server exited with code {code}{said}"

    async def aclose(self) -> None:
        """Close stdin, give the server a moment to exit, then stop its group (the
        order MCP's stdio transport asks for: EOF, SIGTERM, SIGKILL)."""
        await stop_group(self.proc, self.grace, self.clock.sleep)
        for pump in self._pumps:
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        self.peer.close("the session closed")
