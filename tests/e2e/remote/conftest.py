"""`loopd serve` on loopback with the daemon on, and editors reaching it through
`loopd acp --remote` (the ACP SDK's client on the bridge's stdio), optionally
through `Cuttable`, a TCP relay whose connections a test drops and refuses at will
(a network that goes away and comes back)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, Client, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation

from tests.e2e.acp.conftest import ROOT, Home, home
from tests.e2e.daemon.conftest import loopd

__all__ = ["home"]

LOOPD = [sys.executable, "-m", "loopd"]


@dataclass
class Server:
    """A running `loopd serve`: where it listens and how a client proves itself."""

    url: str
    port: int
    fingerprint: str
    token: str
    proc: asyncio.subprocess.Process
    stderr: list[str] = field(default_factory=list)

    def via(self, port: int) -> str:
        """The URL of this server through a relay listening on `port`."""
        return self.url.replace(f":{self.port}/", f":{port}/")


async def start_server(
    home: Home, *args: str, token: str | None = None, inside: Sequence[str] = ()
) -> Server:
    """`loopd serve` on a free loopback port, with a new token unless given one;
    `inside`: a command it runs under (a container's namespaces)."""
    if token is None:
        code, token, err = await loopd(home, "serve", "token")
        assert code == 0, err
    argv = [*inside, *LOOPD, "serve", "--listen", "127.0.0.1:0", "--root", str(home.work), *args]
    return await serve(argv, home.env(LOOPD_DAEMON="on"), token)


async def serve(argv: Sequence[str], env: Mapping[str, str], token: str) -> Server:
    """`argv` (a `loopd serve --listen 127.0.0.1:0 ...` whose token is `token`)
    started, once it has said where it listens and which roots it serves."""
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, cwd=ROOT,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    said: list[str] = []
    while not any(line.startswith("loopd serve: roots") for line in said):
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert line, f"loopd serve exited: {''.join(said)}"
        said.append(line)
    text = "".join(said)
    url = re.search(r"listening on (\S+)", text)
    assert url is not None, text
    found = re.search(r"fingerprint (\S+)", text)
    server = Server(
        url.group(1), int(url.group(1).rsplit(":", 1)[1].split("/")[0]),
        found.group(1) if found else "", token.strip(), proc, said,
    )  # fmt: skip
    server_logs[id(proc)] = asyncio.create_task(_drain(proc, said))
    return server


server_logs: dict[int, asyncio.Task[None]] = {}


async def _drain(proc: asyncio.subprocess.Process, into: list[str]) -> None:
    assert proc.stderr is not None
    while line := await proc.stderr.readline():
        into.append(line.decode())


async def stop_server(server: Server) -> None:
    if server.proc.returncode is None:
        server.proc.terminate()
    await asyncio.wait_for(server.proc.wait(), 30)
    task = server_logs.pop(id(server.proc), None)
    if task is not None:
        await task


@pytest.fixture
async def server(home: Home) -> AsyncIterator[Server]:
    served = await start_server(home)
    yield served
    await stop_server(served)
    await loopd(home, "daemon", "stop")
    said = "".join(served.stderr)
    assert "Traceback" not in said, said  # clients that left untidily are no error
    assert served.token not in said


@asynccontextmanager
async def remote_acp(
    home: Home,
    server: Server,
    client: Client,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[ClientSideConnection]:
    """`loopd acp --remote` to `server` (at `url`, if given), initialized."""
    child_env = home.env(LOOPD_REMOTE_TOKEN=server.token, **(env or {}))
    args = ["acp", "--remote", url or server.url, "--fingerprint", server.fingerprint]
    async with spawn_agent_process(client, *LOOPD, *args, env=child_env, cwd=home.root) as (
        conn,
        _,
    ):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="py-remote-e2e", version="0"),
        )
        assert init.protocol_version == 1
        yield conn


@dataclass
class Cuttable:
    """A TCP relay to `port` on loopback. `cut()` drops every connection it carries
    and refuses new ones until `mend()` (each is accepted and closed at once)."""

    port: int
    listening: int = 0
    open: bool = True
    pairs: set[asyncio.StreamWriter] = field(default_factory=set)
    carried: int = 0  # connections relayed so far
    _server: asyncio.Server | None = None

    async def __aenter__(self) -> Cuttable:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.listening = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.cut()
        assert self._server is not None
        self._server.close()

    def cut(self) -> None:
        self.open = False
        for writer in list(self.pairs):
            writer.transport.abort()
        self.pairs.clear()

    def mend(self) -> None:
        self.open = True

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.open:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            writer.transport.abort()
            return
        self.carried += 1
        self.pairs |= {writer, up_writer}
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, ConnectionError):
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    writer.transport.abort()
