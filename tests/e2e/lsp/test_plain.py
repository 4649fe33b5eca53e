"""`loopd lsp` with a plain LSP client (VS Code's capabilities, no extension): commands,
code actions, `window/showMessageRequest` approvals, progress and the log transcript;
and the editor's buffers as the agent's files, for every client."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient as PlainClient

from loopd.lsp.wire import raw_converter
from tests.e2e.lsp.conftest import LAUNCHER, Editor, Start, launcher_env, until


async def turn_state(editor: Editor, turn_id: str) -> dict:
    status = await editor.command("loopd.status")
    return next(t for t in status["turns"] if t["turnId"] == turn_id)


async def wait_turn(editor: Editor, turn_id: str) -> dict:
    async with asyncio.timeout(10):
        while (state := await turn_state(editor, turn_id))["state"] != "ended":  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    return state


def log_text(editor: Editor) -> str:
    return "\n".join(m.message for m in editor.client.log_messages)


@pytest.mark.parametrize(
    ("answer", "ran"), [("Allow once", ["make test"]), ("Reject", []), ("Always reject", [])]
)
async def test_approvals_through_show_message_request(
    start: Start, answer: str, ran: list[str]
) -> None:
    script = {
        "replies": [{"tools": [["c1", "bash", {"command": "make test"}]]}, {"text": "all good"}],
        "ask": ["bash"],
    }
    editor = await start(script, profile="plain")
    editor.answers.append(answer)
    reply = await editor.command("loopd.ask", {"prompt": "run the tests"})
    assert set(reply) == {"sessionId", "turnId"}
    assert (await wait_turn(editor, reply["turnId"]))["stopReason"] == "end_turn"
    (dialog,) = editor.dialogs
    assert "make test" in dialog.message
    assert [a.title for a in dialog.actions] == [
        "Allow once",
        "Always allow",
        "Reject",
        "Always reject",
    ]
    assert editor.executed() == ran
    assert editor.updates == []  # no extension for this client: the log tells the story
    transcript = log_text(editor)
    assert "you: run the tests" in transcript
    assert "[tool] Run `make test`" in transcript
    assert "loopd: all good" in transcript
    assert f"[turn] {reply['turnId']} ended: end_turn" in transcript
    (reports,) = editor.client.progress_reports.values()
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].cancellable
    assert "Run `make test`" in [getattr(r, "message", None) for r in reports]


async def test_without_dialogs_the_approve_command_answers(start: Start) -> None:
    script = {
        "replies": [{"tools": [["c1", "bash", {"command": "make"}]]}, {"text": "ok"}],
        "ask": ["bash"],
    }
    editor = await start(script, profile="plain", answer_dialogs=False)
    reply = await editor.command("loopd.ask", {"prompt": "build"})
    await until(lambda: any("loopd.approve" in m.message for m in editor.client.messages))
    (question,) = (await editor.command("loopd.status"))["questions"]
    assert question["title"] == "Run `make`"
    answered = await editor.command(
        "loopd.approve", {"approvalId": question["approvalId"], "decision": "allow_once"}
    )
    assert answered["decision"] == "allow_once"
    assert (await wait_turn(editor, reply["turnId"]))["stopReason"] == "end_turn"
    assert editor.executed() == ["make"]


async def test_an_edit_to_an_open_document_goes_through_apply_edit(
    tmp_path: Path, start: Start
) -> None:
    path = tmp_path / "app.py"
    path.write_text("x = 1\ny = 2\n")
    script = {
        "replies": [
            {"tools": [["w1", "write", {"path": str(path), "text": "x = 1\ny = 3\n"}]]},
            {"text": "done"},
        ]
    }
    editor = await start(script, profile="plain")
    uri = editor.open(path, "x = 1\ny = 2\n")
    reply = await editor.command("loopd.ask", {"prompt": "bump y"})
    assert (await wait_turn(editor, reply["turnId"]))["stopReason"] == "end_turn"
    (edit,) = editor.edits
    assert edit.label == "loopd: edit app.py"
    (change,) = edit.edit.document_changes
    assert change.text_document.version == 1
    assert editor.buffers[uri] == (2, "x = 1\ny = 3\n")
    assert path.read_text() == "x = 1\ny = 2\n"  # the buffer changed, not the disk
    assert [d.uri for d in editor.client.shown_documents] == [uri]


async def test_a_file_that_is_not_open_is_written_to_disk(tmp_path: Path, start: Start) -> None:
    path = tmp_path / "new.txt"
    script = {
        "replies": [
            {"tools": [["w1", "write", {"path": str(path), "text": "fresh\n"}]]},
            {"text": "ok"},
        ]
    }
    editor = await start(script, profile="plain")
    reply = await editor.command("loopd.ask", {"prompt": "create"})
    await wait_turn(editor, reply["turnId"])
    assert path.read_text() == "fresh\n"
    assert editor.edits == []


async def test_the_agent_reads_the_unsaved_buffer(tmp_path: Path, start: Start) -> None:
    path = tmp_path / "notes.py"
    path.write_text("on disk\n")
    script = {"replies": [{"tools": [["r1", "read", {"path": str(path)}]]}, {"text": "read it"}]}
    editor = await start(script)
    uri = editor.open(path, "on disk\n")
    editor.change(uri, None, "typed\nbut unsaved\n")  # a full change
    span = types.Range(start=types.Position(0, 0), end=types.Position(0, 5))
    editor.change(uri, types.TextEdit(range=span, new_text="edited"), "edited\nbut unsaved\n")
    session_id = await editor.new_session()
    await editor.request(
        "loopd/session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": "read"}]},
    )
    results = [
        c["content"]["text"]
        for u in editor.updates
        if u["update"]["sessionUpdate"] == "tool_call_update"
        for c in u["update"].get("content", [])
    ]
    assert results == ["edited\nbut unsaved\n"]


async def test_an_open_secret_is_refused_before_its_buffer_is_read(
    tmp_path: Path, start: Start
) -> None:
    """`.env` open in the editor with unsaved text: the diff preview of a write, a
    read and an edit through a symlink all ask the gate first, which refuses a secret
    whatever buffer holds it."""
    secret = tmp_path / ".env"
    secret.write_text("TOKEN=on-disk\n")
    (tmp_path / "alias.txt").symlink_to(secret)
    script = {
        "replies": [
            {
                "tools": [
                    ["w1", "write", {"path": str(secret), "text": "TOKEN=new\n"}],
                    ["r1", "read", {"path": str(secret)}],
                    ["r2", "read", {"path": str(tmp_path / "alias.txt")}],
                ]
            },
            {"text": "done"},
        ]
    }
    editor = await start(script)
    uri = editor.open(secret, "TOKEN=on-disk\n")
    editor.change(uri, None, "TOKEN=unsaved-buffer-s3cret\n")
    session_id = await editor.new_session()
    await editor.request(
        "loopd/session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]},
    )
    shown = json.dumps(editor.updates)
    assert "never reads it" in shown
    assert "unsaved-buffer-s3cret" not in shown
    assert "on-disk" not in shown
    assert editor.edits == []


async def test_cancel_by_command_and_by_progress_bar(start: Start) -> None:
    script = {"replies": [{"text": "one", "hold": True}, {"text": "two", "hold": True}]}
    editor = await start(script, profile="plain")
    first = await editor.command("loopd.ask", {"prompt": "first"})
    await until(
        lambda: any(
            getattr(r, "message", None) == "Writing" for r in _reports(editor, first["turnId"])
        )
    )
    assert (await editor.command("loopd.cancel", {}))["cancelled"] == [first["turnId"]]
    assert (await wait_turn(editor, first["turnId"]))["stopReason"] == "cancelled"

    second = await editor.command("loopd.ask", {"prompt": "second"})
    await until(
        lambda: any(
            getattr(r, "message", None) == "Writing" for r in _reports(editor, second["turnId"])
        )
    )
    token = f"loopd/{second['turnId']}"
    editor.client.protocol.notify(
        types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
    )
    assert (await wait_turn(editor, second["turnId"]))["stopReason"] == "cancelled"
    assert editor.progress_ends() == ["cancelled", "cancelled"]


def _reports(editor: Editor, turn_id: str) -> list:
    return editor.client.progress_reports.get(f"loopd/{turn_id}", [])


async def test_code_actions_start_a_turn_with_the_selection(tmp_path: Path, start: Start) -> None:
    path = tmp_path / "calc.py"
    editor = await start({"replies": [{"text": "it adds"}, {"text": "fixed"}]})
    uri = editor.open(path, "def add(a, b):\n    return a + b\n")
    span = types.Range(start=types.Position(0, 0), end=types.Position(1, 16))
    diag = types.Diagnostic(range=span, message="missing docstring", source="lint")
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=span,
        context=types.CodeActionContext(diagnostics=[diag]),
    )
    # Read the answer as JSON: lsprotocol's client-side parsing of a CodeAction that
    # carries a command mangles it (a known quirk, not what the server sent).
    pending = editor.client.protocol.send_request(
        types.TEXT_DOCUMENT_CODE_ACTION, params, msg_id="ca"
    )
    editor.client.protocol._result_types.pop("ca")
    actions = await asyncio.wrap_future(pending)
    titles = [a["title"] for a in actions]
    assert titles == [
        "Fix this diagnostic (loopd)",
        "Ask loopd",
        "Explain (loopd)",
        "Refactor (loopd)",
    ]
    assert actions[0]["diagnostics"][0]["message"] == "missing docstring"
    explain = actions[2]["command"]
    reply = await editor.command(explain["command"], *explain["arguments"])
    session_id = reply["sessionId"]
    await until(lambda: "it adds" in editor.texts())
    # The prompt is journaled, not echoed; a load replays it.
    await editor.request("loopd/session/load", {"sessionId": session_id, "cwd": str(tmp_path)})
    users = [
        u["update"]["content"]
        for u in editor.updates
        if u["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert users[0] == {"type": "text", "text": "Explain what this code does."}
    assert users[1]["resource"] == {
        "uri": f"{uri}#L1-2",
        "text": "def add(a, b):\n    return a + b",
    }
    fix = actions[0]["command"]
    await editor.command(fix["command"], *fix["arguments"])
    await until(lambda: "fixed" in editor.texts())
    assert session_id == (await editor.command("loopd.status"))["sessionId"]


async def test_setters_undo_and_bad_arguments(start: Start) -> None:
    editor = await start({}, profile="plain")
    created = await editor.command("loopd.newSession")
    mode = await editor.command("loopd.setMode", "plan")
    assert mode["sessionId"] == created["sessionId"]
    assert {o["id"]: o["currentValue"] for o in mode["configOptions"]}["mode"] == "plan"
    model = await editor.command("loopd.setModel", {"value": "scripted"})
    assert {o["id"]: o["currentValue"] for o in model["configOptions"]}["model"] == "scripted"
    undone = await editor.command("loopd.undo")
    assert (undone["restored"], undone["summary"]) == (
        [],
        "Nothing to undo: the last turn changed no files.",
    )
    with pytest.raises(Exception, match="yolo"):
        await editor.command("loopd.setMode", "yolo")
    with pytest.raises(Exception, match="no open question"):
        await editor.command("loopd.approve", {"approvalId": "nope"})
    assert (await editor.command("loopd.status"))["sessions"] == [created["sessionId"]]


async def test_tcp_serves_several_editors_on_one_store(tmp_path: Path) -> None:
    env = launcher_env(tmp_path, {"replies": [{"text": "hi"}]})
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        str(LAUNCHER),
        "--tcp",
        "127.0.0.1:0",
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert server.stderr is not None
        line = (await asyncio.wait_for(server.stderr.readline(), 20)).decode()
        port = int(line.rsplit(":", 1)[1])
        clients = []
        for _ in range(2):
            client = PlainClient("test", "1", converter_factory=raw_converter)
            await client.start_tcp("127.0.0.1", port)
            await client.initialize_async(
                types.InitializeParams(capabilities=types.ClientCapabilities())
            )
            clients.append(client)
        made = await clients[0].workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="loopd.newSession", arguments=[{"cwd": str(tmp_path)}]
            )
        )
        listed = await clients[1].protocol.send_request_async("loopd/session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [made["sessionId"]]
        for client in clients:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()
    finally:
        server.kill()
        await server.wait()
