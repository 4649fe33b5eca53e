"""The editor's files and terminals through the SDK, against a client that keeps
buffers in memory and runs nothing; and the pure translations."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SseMcpServer,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from loopd.acp.link import AcpLink
from loopd.acp.translate import decision_of, mcp_configs, permission_tool_call
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import DiffContent, Location
from loopd.runtimes.base import McpServerConfig
from loopd.testing.fakes import ScriptedProvider
from loopd.testing.harness import scripted_manager
from tests.unit.acp.conftest import RecordingClient, connected


@dataclass
class EditorClient(RecordingClient):
    """Unsaved buffers in memory, writes recorded, terminals that exit when told."""

    buffers: dict[str, str] = field(default_factory=dict)
    writes: list[tuple[str, str]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    created: list[dict[str, Any]] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    exit: asyncio.Event = field(default_factory=asyncio.Event)

    async def read_text_file(self, session_id: str, path: str, **kw: Any) -> ReadTextFileResponse:
        self.calls.append("read")
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


@dataclass
class DiskFiles:
    written: dict[str, str] = field(default_factory=dict)

    async def read_text(self, path: str) -> str:
        return await asyncio.to_thread(Path(path).read_text)

    async def write_text(self, path: str, text: str) -> None:
        self.written[path] = text


EDITOR = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


async def test_reads_and_writes_inside_the_roots_go_through_the_editor(tmp_path: Path) -> None:
    inside, outside = tmp_path / "w" / "a.py", tmp_path / "elsewhere.txt"
    inside.parent.mkdir()
    inside.write_text("on disk")
    outside.write_text("outside")
    client = EditorClient(buffers={str(inside): "unsaved buffer"})
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    disk = DiskFiles()
    async with connected(manager, client, EDITOR) as s:
        assert s.agent.link is not None
        files = s.agent.link.files("s1", [str(inside.parent)], disk)
        assert await files.read_text(str(inside)) == "unsaved buffer"
        assert await files.read_text(str(outside)) == "outside"
        await files.write_text(str(inside), "new")
        await files.write_text(str(outside), "new outside")
        with pytest.raises(FileNotFoundError):
            await files.read_text(str(inside.parent / "missing.py"))
    assert client.writes == [(str(inside), "new")]
    assert disk.written == {str(outside): "new outside"}


async def test_a_client_without_fs_or_terminal_is_never_asked(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("disk")
    client = EditorClient(buffers={str(target): "buffer"})
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    disk = DiskFiles()
    async with connected(manager, client, ClientCapabilities()) as s:
        assert s.agent.link is not None
        files = s.agent.link.files("s1", [str(tmp_path)], disk)
        assert await files.read_text(str(target)) == "disk"
        await files.write_text(str(target), "x")
        assert s.agent.link.terminals("s1") is None
    assert client.calls == []
    assert disk.written == {str(target): "x"}


async def test_a_terminal_run_reports_its_exit_and_is_released(tmp_path: Path) -> None:
    client = EditorClient()
    client.exit.set()
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    started: list[str] = []

    async def on_start(terminal_id: str) -> None:
        started.append(terminal_id)

    async with connected(manager, client, EDITOR) as s:
        assert s.agent.link is not None
        terminals = s.agent.link.terminals("s1")
        assert terminals is not None
        run = await terminals.run(["ls", "-l"], str(tmp_path), {"A": "1"}, on_start, 4096)
    assert (run.output, run.exit_code, run.truncated) == ("hello\n", 3, False)
    assert started == ["t1"] and client.released == ["t1"]
    created = client.created[0]
    assert created["command"] == "ls" and created["args"] == ["-l"]
    assert created["env"] == [EnvVariable(name="A", value="1")]


async def test_a_cancelled_terminal_run_is_released(tmp_path: Path) -> None:
    client = EditorClient()  # the command never exits
    manager = scripted_manager(tmp_path, ScriptedProvider.of())

    async def on_start(terminal_id: str) -> None:
        return None

    async with connected(manager, client, EDITOR) as s:
        assert s.agent.link is not None
        terminals = s.agent.link.terminals("s1")
        assert terminals is not None
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await terminals.run(["sleep", "99"], str(tmp_path), {}, on_start)
        await s.conn.list_sessions()  # a round trip: the release has been handled
    assert client.released == ["t1"]


async def test_an_update_that_is_not_acp_fails_loudly(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, RecordingClient()) as s:
        link: AcpLink | None = s.agent.link
        assert link is not None
        with pytest.raises(ValueError, match=r"sessionUpdate|update"):
            await link.send_update("s1", {"sessionUpdate": "no_such_update"})


def test_the_permission_tool_call_names_and_previews_the_edit() -> None:
    request = ApprovalRequest(
        "s1",
        "c1",
        "edit",
        "Edit /w/a.py",
        "edit",
        {"path": "/w/a.py", "old": "x", "new": "y"},
        content=(DiffContent("/w/a.py", "x\n", "y\n"),),
        locations=(Location("/w/a.py", 3),),
    )
    call = permission_tool_call(request)
    dumped = call.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped == {
        "toolCallId": "c1",
        "status": "pending",
        "title": "Edit /w/a.py",
        "kind": "edit",
        "rawInput": {"path": "/w/a.py", "old": "x", "new": "y"},
        "content": [{"type": "diff", "path": "/w/a.py", "oldText": "x\n", "newText": "y\n"}],
        "locations": [{"path": "/w/a.py", "line": 3}],
    }


@pytest.mark.parametrize(
    ("outcome", "decision"),
    [
        (AllowedOutcome(outcome="selected", option_id="allow_once"), ApprovalDecision.ALLOW_ONCE),
        (
            AllowedOutcome(outcome="selected", option_id="allow_always"),
            ApprovalDecision.ALLOW_ALWAYS,
        ),
        (AllowedOutcome(outcome="selected", option_id="reject_once"), ApprovalDecision.REJECT_ONCE),
        (
            AllowedOutcome(outcome="selected", option_id="reject_always"),
            ApprovalDecision.REJECT_ALWAYS,
        ),
        (AllowedOutcome(outcome="selected", option_id="cancelled"), ApprovalDecision.REJECT_ONCE),
        (AllowedOutcome(outcome="selected", option_id="bogus"), ApprovalDecision.REJECT_ONCE),
        (DeniedOutcome(outcome="cancelled"), ApprovalDecision.CANCELLED),
    ],
)
def test_permission_answers_map_to_decisions(outcome: Any, decision: ApprovalDecision) -> None:
    assert decision_of(RequestPermissionResponse(outcome=outcome)) == decision


def test_mcp_servers_from_the_editor() -> None:
    servers = [
        McpServerStdio(name="fs", command="mcp-fs", args=["--root", "/w"], env=[]),
        HttpMcpServer(
            type="http",
            name="web",
            url="http://127.0.0.1:9/mcp",
            headers=[HttpHeader(name="Authorization", value="t")],
        ),
        SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
    ]
    assert mcp_configs(servers) == (
        McpServerConfig("fs", "mcp-fs", ("--root", "/w"), {}),
        McpServerConfig("web", url="http://127.0.0.1:9/mcp", headers={"Authorization": "t"}),
    )
