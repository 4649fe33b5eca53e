"""`loopd lsp --remote` against `loopd serve` on loopback, driven by pytest-lsp's real
LSP client (the Neovim profile with the `loopd/*` extension, as the LSP e2e tests):
a turn streamed back, an approval answered by the editor and run on the server, a
network dropped mid-turn and mended with nothing shown twice, and the boundary."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home
from tests.e2e.daemon.conftest import loopd
from tests.e2e.lsp.conftest import Editor, _client_factory, _wire, until
from tests.e2e.remote.conftest import LOOPD, Cuttable, Server, start_server, stop_server
from tests.e2e.remote.test_refusals import pinned
from tests.e2e.remote.test_remote_session import WORDS, _journaled_end, journaled_reply
from tests.e2e.remote.test_shared import read_then_edit

pytestmark = pytest.mark.e2e

Connect = Callable[..., Awaitable[Editor]]


@pytest.fixture
async def connect(
    home: Home, server: Server, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Connect]:
    """`await connect(url=None, root=home.work)`: an editor whose `loopd lsp --remote`
    reaches `server` (at `url` when given), initialized with `root` as its workspace."""
    editors: list[Editor] = []
    monkeypatch.chdir(home.root)

    async def _connect(url: str | None = None, root: Path | None = None) -> Editor:
        argv = [*LOOPD, "lsp", "--remote", url or server.url, "--fingerprint", server.fingerprint]
        env = home.env(LOOPD_REMOTE_TOKEN=server.token)
        config = ClientServerConfig(argv, client_factory=_client_factory, server_env=env)
        editor = Editor(await config.start(), home.work)
        editors.append(editor)
        _wire(editor, "extension", answer_dialogs=True)
        caps = client_capabilities("neovim@v0.11")
        caps.experimental = {"loopd": True}
        folder = (root or home.work).as_uri()
        editor.server = await editor.client.initialize_session(
            types.InitializeParams(capabilities=caps, root_uri=folder)
        )
        return editor

    yield _connect
    for editor in editors:
        if editor.client.stopped:
            continue
        if editor.server is not None:
            await editor.client.shutdown_session()
        else:
            editor.client.exit(None)  # never initialized: `exit` alone ends the bridge
        await editor.client.stop()


async def prompt(editor: Editor, sid: str, words: str) -> dict[str, Any]:
    blocks = [{"type": "text", "text": words}]
    result = await editor.request("loopd/session/prompt", {"sessionId": sid, "prompt": blocks})
    return dict(result)


async def test_a_turn_streams_back_and_the_editor_s_approval_runs_on_the_server(
    home: Home, server: Server, connect: Connect
) -> None:
    (home.work / "a.py").write_text("1\n")
    home.fake.script("*", *read_then_edit("edited on the server"))
    editor = await connect()
    assert editor.server is not None and editor.server.server_info is not None
    assert editor.server.server_info.name == "loopd"  # the daemon's LSP frontend answered
    editor.answers.append("allow_once")
    sid = await editor.new_session()
    done = await prompt(editor, sid, "edit a.py")
    assert done["stopReason"] == "end_turn"
    assert [p["toolCall"]["toolCallId"] for p in editor.permission_requests] == ["e1"]
    assert (home.work / "a.py").read_text() == "2\n"  # the server's file
    assert editor.texts() == "edited on the server"
    _, out, _ = await loopd(home, "doctor")
    assert "over http (lsp)" in out and sid in out


async def test_an_edit_to_a_file_open_in_the_editor_lands_in_its_buffer(
    home: Home, server: Server, connect: Connect
) -> None:
    """The daemon's LSP frontend edits an open document as locally: through
    `workspace/applyEdit` to the editor, whose buffer (unsaved) changes."""
    path = home.work / "a.py"
    path.write_text("1\n")
    home.fake.script("*", *read_then_edit("edited in the buffer"))
    editor = await connect()
    uri = editor.open(path, "1\n")
    editor.answers.append("allow_once")
    sid = await editor.new_session()
    assert (await prompt(editor, sid, "edit a.py"))["stopReason"] == "end_turn"
    (edit,) = editor.edits
    assert list(edit.edit.changes or {}) == [uri]  # Neovim's profile: unversioned edits
    assert editor.buffers[uri] == (2, "2\n")
    assert path.read_text() == "1\n"  # the buffer changed, not the disk


async def test_a_network_dropped_mid_turn_is_mended_and_nothing_shows_twice(
    home: Home, server: Server, connect: Connect
) -> None:
    """The network drops after the reply's first words; the turn runs on on the server;
    once the network is back the rest arrives once, in order, then the turn's answer,
    and the journal holds exactly what the editor saw."""
    home.fake.script("*", Reply(text=WORDS, pause_after=4, gate="cut"))
    async with Cuttable(server.port) as relay:
        editor = await connect(url=server.via(relay.listening))
        sid = await editor.new_session()
        turn = asyncio.ensure_future(prompt(editor, sid, "count"))
        await until(editor.texts, within=60)  # the first words are on the editor's screen
        relay.cut()
        home.fake.release("cut")  # the rest is sent while the editor is away
        await until(lambda: _journaled_end(home, sid), within=60)
        seen_before = editor.texts()
        assert WORDS.startswith(seen_before) and seen_before != WORDS
        relay.mend()
        done = await asyncio.wait_for(turn, 60)
        assert done["stopReason"] == "end_turn"
        assert editor.texts() == WORDS  # the rest once, in order
        assert relay.carried > 2  # the stream was opened again
        await editor.client.shutdown_session()  # while the relay still carries it
    assert await journaled_reply(home, sid) == editor.texts()


async def test_a_server_that_forgot_the_connection_fails_what_waits_and_the_bridge_exits(
    home: Home, server: Server, connect: Connect
) -> None:
    """LSP's state was the connection's: when the server restarts, the request still
    waiting fails, the editor is told to restart the language server, and the bridge
    exits 1 (an editor restarts a server that exits)."""
    home.fake.script("*", Reply(text=WORDS, pause_after=4, gate="hold"))
    async with Cuttable(server.port) as relay:
        editor = await connect(url=server.via(relay.listening))
        sid = await editor.new_session()
        turn = asyncio.ensure_future(prompt(editor, sid, "wait"))
        await until(editor.texts, within=60)
        await stop_server(server)
        relay.cut()
        again = await start_server(home, token=server.token)
        try:
            relay.port = again.port
            relay.mend()
            with pytest.raises(Exception, match=r"no longer knows this connection|lost"):
                await asyncio.wait_for(turn, 120)
            bridge = editor.client._server
            assert bridge is not None
            assert await asyncio.wait_for(bridge.wait(), 60) == 1
        finally:
            home.fake.release("hold")
            await stop_server(again)
    told = [m.message for m in editor.client.messages]
    assert any("restart the language server" in m for m in told), told
    await editor.client.stop()


async def test_what_names_a_path_outside_the_roots_is_refused(
    home: Home, server: Server, connect: Connect
) -> None:
    secret = home.root / "secret.txt"  # beside the root, not beneath it
    secret.write_text("server-side secret\n")
    editor = await connect()
    refused = "outside what this server serves"
    with pytest.raises(Exception, match=refused):
        await editor.request("loopd/session/new", {"cwd": str(home.root), "mcpServers": []})
    ask = {"prompt": "summarise", "uri": secret.as_uri()}  # not open: read from the disk
    with pytest.raises(Exception, match=refused):
        await editor.command("loopd.ask", ask)
    with pytest.raises(Exception, match=refused):
        await editor.command("loopd.newSession", {"cwd": "/"})
    assert home.fake.requests == []  # nothing reached the model
    with pytest.raises(Exception, match=refused):
        await connect(root=home.root)  # a workspace outside: sessions would open there


async def test_a_numbered_message_posted_again_is_passed_on_once(
    home: Home, server: Server
) -> None:
    """What `loopd lsp --remote` relies on when a post's answer was lost: the server
    passes each `Loopd-Message` number on once, whatever the message (an editor's
    notification carries no id to tell a repeat by)."""
    url = server.url.replace("/acp", "/lsp")
    auth = {"Authorization": f"Bearer {server.token}"}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}
    async with httpx.AsyncClient(verify=pinned(home), headers=auth, timeout=30) as http:
        hello = await http.post(url, json=init)
        assert hello.status_code == 200 and hello.json()["result"]["serverInfo"]["name"] == "loopd"
        on = {"Acp-Connection-Id": hello.headers["Acp-Connection-Id"]}
        elsewhere = await http.post(url.replace("/lsp", "/acp"), json={}, headers=on)
        assert elsewhere.status_code == 404  # an LSP connection is not an ACP one
        new = {"cwd": str(home.work), "mcpServers": []}
        for rid, number in ((1, 1), (2, 1), (3, 2)):  # 2 is a repeat of number 1
            request = {"jsonrpc": "2.0", "id": rid, "method": "loopd/session/new", "params": new}
            numbered = {**on, "Loopd-Message": str(number)}
            posted = await http.post(url, json=request, headers=numbered)
            assert posted.status_code == 202
        answered = await _answers(http, url, on, want=2)
        assert sorted(answered) == [1, 3]


async def _answers(http: httpx.AsyncClient, url: str, on: dict[str, str], want: int) -> list[Any]:
    """The ids of the first `want` responses on the connection's stream."""
    ids: list[Any] = []
    headers = {**on, "Accept": "text/event-stream"}
    async with http.stream("GET", url, headers=headers) as stream:
        async for line in stream.aiter_lines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if "method" not in message:
                    ids.append(message["id"])
                if len(ids) == want:
                    return ids
    return ids
