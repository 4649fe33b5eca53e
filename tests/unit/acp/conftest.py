"""An in-process ACP client wired to `LoopdAgent` through the SDK over a socket pair,
so every message crosses the real NDJSON framing and the real routers."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, Client, RequestError, connect_to_agent
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from loopd.acp.agent import LoopdAgent
from loopd.acp.server import serve
from loopd.policy.paths import PathPolicy
from loopd.sessions.manager import SessionManager
from loopd.tools import processes
from loopd.tools.files import BeneathFiles

EDITOR = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


def gate(*roots: Path, home: Path | None = None) -> BeneathFiles:
    """The local files a session's tools get: the path policy, then beneath-opens."""
    canonical = tuple(os.path.realpath(r) for r in roots)
    return BeneathFiles(PathPolicy(canonical, os.path.realpath(home or roots[0])))


@pytest.fixture(autouse=True)
def no_command_ran_uncontained(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a fresh loopd would: no command has run outside a pid
    namespace yet (`processes.started`, sticky for the process's life)."""
    monkeypatch.setattr(processes, "_UNCONTAINED", [])


@dataclass
class RecordingClient(Client):
    """Records every update; answers permission requests with the queued option
    kinds in order, or, with none queued, holds the request until `release` is set
    and then answers `cancelled` (a person who pressed Stop)."""

    answers: list[str] = field(default_factory=list)
    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    permissions: list[tuple[ToolCallUpdate, list[PermissionOption]]] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    replying: asyncio.Event = field(default_factory=asyncio.Event)  # a message chunk came

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(
            (session_id, update.model_dump(mode="json", by_alias=True, exclude_none=True))
        )
        if self.updates[-1][1]["sessionUpdate"] == "agent_message_chunk":
            self.replying.set()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kw: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        self.asked.set()
        if not self.answers:
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        kind = self.answers.pop(0)
        option = next(o for o in options if o.kind == kind)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for _, u in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"]["text"] for _, u in self.updates if u["sessionUpdate"] == kind)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [u for _, u in self.updates if u["sessionUpdate"] == kind]


@dataclass
class Wire:
    """Every raw message the agent wrote, in order."""

    received: list[dict[str, Any]] = field(default_factory=list)

    def observe(self, event: StreamEvent) -> None:
        if event.direction is StreamDirection.INCOMING:
            self.received.append(event.message)


@dataclass
class Session:
    conn: ClientSideConnection
    agent: LoopdAgent
    wire: Wire

    async def raw(self, method: str, params: Any) -> Any:
        return await self.conn._conn.send_request(method, params)


@asynccontextmanager
async def connected(
    manager: SessionManager | asyncio.Future[SessionManager],
    client: Client,
    capabilities: ClientCapabilities | None = None,
    unstable: bool = False,
) -> AsyncIterator[Session]:
    """A live, initialized connection; closing it lets `serve` finish. `unstable`
    lets the client take the SDK's unstable requests (elicitation)."""
    agent_sock, client_sock = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=agent_sock)
    client_reader, client_writer = await asyncio.open_connection(sock=client_sock)
    agent = LoopdAgent(manager)
    served = asyncio.create_task(serve(agent, agent_writer, agent_reader))
    wire = Wire()
    conn = connect_to_agent(
        client,
        client_writer,
        client_reader,
        observers=[wire.observe],
        use_unstable_protocol=unstable,
    )
    await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=capabilities or ClientCapabilities(),
        client_info=Implementation(name="test-client", version="0"),
    )
    try:
        yield Session(conn, agent, wire)
    finally:
        await conn.close()
        client_writer.close()
        await asyncio.wait_for(served, 5)


def text(value: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=value)]


@dataclass
class EditorClient(RecordingClient):
    """Unsaved buffers in memory, writes recorded, terminals that exit when told."""

    buffers: dict[str, str] = field(default_factory=dict)
    writes: list[tuple[str, str]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    read_paths: list[str] = field(default_factory=list)
    created: list[dict[str, Any]] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    exit: asyncio.Event = field(default_factory=asyncio.Event)

    async def read_text_file(self, session_id: str, path: str, **kw: Any) -> ReadTextFileResponse:
        self.calls.append("read")
        self.read_paths.append(path)
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kw: Any
    ) -> WriteTextFileResponse:
        self.calls.append("write")
        self.writes.append((path, content))
        return WriteTextFileResponse()

    async def create_terminal(
        self, session_id: str, command: str, **kw: Any
    ) -> CreateTerminalResponse:
        self.created.append({"command": command, **kw})
        return CreateTerminalResponse(terminal_id=f"t{len(self.created)}")

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kw: Any
    ) -> WaitForTerminalExitResponse:
        await self.exit.wait()
        return WaitForTerminalExitResponse(exit_code=3)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kw: Any
    ) -> TerminalOutputResponse:
        return TerminalOutputResponse(output="hello\n", truncated=False)

    async def release_terminal(self, session_id: str, terminal_id: str, **kw: Any) -> None:
        self.released.append(terminal_id)
