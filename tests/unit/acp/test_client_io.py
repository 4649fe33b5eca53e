"""The editor's files and terminals through the SDK, against a client that keeps
buffers in memory and runs nothing; and the pure translations."""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SseMcpServer,
)

from loopd.acp.link import AcpLink
from loopd.acp.translate import decision_of, mcp_configs, permission_tool_call
from loopd.mcp.config import McpServerConfig
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import DiffContent, Location
from loopd.testing.fakes import ScriptedProvider
from loopd.testing.harness import scripted_manager
from loopd.tools.access import PathRefused
from tests.unit.acp.conftest import EDITOR, EditorClient, RecordingClient, connected, gate
from tests.unit.acp.swapping import Swapper, exchange


async def test_reads_and_writes_of_proven_paths_go_through_the_editor(
    tmp_path: Path,
) -> None:
    inside, outside = tmp_path / "w" / "a.py", tmp_path / "elsewhere.txt"
    inside.parent.mkdir()
    inside.write_text("on disk")
    outside.write_text("outside")
    client = EditorClient(buffers={str(inside): "unsaved buffer"})
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, client, EDITOR) as s:
        assert s.agent.link is not None
        files = s.agent.link.files("s1", [str(inside.parent)], gate(inside.parent))
        assert await files.read_text(str(inside)) == "unsaved buffer"
        with pytest.raises(PathRefused, match="outside the session"):
            await files.read_text(str(outside))  # unapproved: neither disk nor editor
        await files.write_text(str(inside), "new")
        with pytest.raises(FileNotFoundError):
            await files.read_text(str(inside.parent / "missing.py"))
    assert client.writes == [(str(inside), "new")]  # the editor reviews the write
    assert inside.read_text() == "new"  # it kept the write in a buffer: loopd saved it
    assert client.calls == ["read", "write"]


async def test_a_secret_is_never_asked_of_the_editor(tmp_path: Path) -> None:
    """The diff preview of `write .env` reads the old text: the gate refuses it before
    the editor could hand its buffer over."""
    secret = tmp_path / ".env"
    secret.write_text("API_KEY=on-disk")
    client = EditorClient(buffers={str(secret): "API_KEY=in-the-buffer"})
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, client, EDITOR) as s:
        assert s.agent.link is not None
        files = s.agent.link.files("s1", [str(tmp_path)], gate(tmp_path))
        with pytest.raises(PathRefused, match="never reads it"):
            await files.read_text(str(secret))
    assert client.calls == []


@dataclass
class DiskEditor(EditorClient):
    """An editor without unsaved buffers: it reads and writes the path it is given
    on its own, following symlinks, as Zed does for a file it has not opened."""

    async def read_text_file(self, session_id: str, path: str, **kw: Any) -> ReadTextFileResponse:
        self.calls.append("read")
        text = await asyncio.to_thread(Path(path).read_text)
        return ReadTextFileResponse(content=text + EDITOR_MARK)


EDITOR_MARK = "(as the editor has it)\n"  # tells the editor's text from the disk's


@dataclass
class UnluckyEditor(DiskEditor):
    """The race won every time: the directory is swapped for a symlink just before
    the editor opens the path, and swapped back just after, so any check loopd makes
    before or after the read sees the real directory."""

    swap: tuple[bytes, bytes] = (b"", b"")

    async def read_text_file(self, session_id: str, path: str, **kw: Any) -> ReadTextFileResponse:
        exchange(*self.swap)
        try:
            return await super().read_text_file(session_id, path, **kw)
        finally:
            exchange(*self.swap)


async def test_a_swap_around_the_editor_read_gives_the_disk_text(tmp_path: Path) -> None:
    ws, private = tmp_path / "ws", tmp_path / "home" / ".aws"
    (ws / "d").mkdir(parents=True)
    private.mkdir(parents=True)
    (ws / "d" / "config").write_text("public\n")
    (private / "config").write_text("SECRET\n")
    os.symlink(private, ws / "swap-link")
    client = UnluckyEditor(swap=(os.fsencode(ws / "d"), os.fsencode(ws / "swap-link")))
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, client, EDITOR) as s:
        assert s.agent.link is not None
        files = s.agent.link.files("s1", [str(ws)], gate(ws, home=tmp_path / "home"))
        texts = [await files.read_text(str(ws / "d" / "config")) for _ in range(20)]
    assert texts == ["public\n"] * 20
    assert client.calls == ["read"] * 20  # the editor did read the secret; it was not used


async def test_a_racing_symlink_swap_never_leaks_through_the_editor(tmp_path: Path) -> None:
    """The attack that read ~/.aws/credentials through Zed: the path is checked, then
    swapped before the editor opens it. The editor is asked again and again while a
    thread flips the folder; not once does its answer carry the secret."""
    ws, private = tmp_path / "ws", tmp_path / "home" / ".aws"
    (ws / "d").mkdir(parents=True)
    private.mkdir(parents=True)
    (ws / "d" / "config").write_text("public\n")
    (private / "config").write_text("SECRET\n")
    client = DiskEditor()
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    tries, leaks, asked_under_race = 0, 0, 30
    async with connected(manager, client, EDITOR) as s:
        assert s.agent.link is not None
        files = s.agent.link.files("s1", [str(ws)], gate(ws, home=tmp_path / "home"))
        target = str(ws / "d" / "config")
        assert await files.read_text(target) == "public\n" + EDITOR_MARK  # the route works
        before = client.calls.count("read")
        swapper = Swapper(ws / "d", private)
        swapper.start()
        try:
            while client.calls.count("read") - before < asked_under_race and tries < 20_000:
                tries += 1
                with contextlib.suppress(OSError):  # the path led outside at the check
                    leaks += "SECRET" in await files.read_text(target)
        finally:
            swapper.halt.set()
            swapper.join()
    assert client.calls.count("read") - before >= asked_under_race, tries
    assert leaks == 0, f"{leaks} leaks out of {tries}"


async def test_a_client_without_fs_or_terminal_is_never_asked(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("disk")
    client = EditorClient(buffers={str(target): "buffer"})
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, client, ClientCapabilities()) as s:
        assert s.agent.link is not None
        files = s.agent.link.files("s1", [str(tmp_path)], gate(tmp_path))
        assert await files.read_text(str(target)) == "disk"
        await files.write_text(str(target), "x")
        assert s.agent.link.terminals("s1") is None
    assert client.calls == []
    assert target.read_text() == "x"


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
