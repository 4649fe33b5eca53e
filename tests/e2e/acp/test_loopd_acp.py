"""The real `loopd acp` (the shipped composition root, the native engine, the real
tools, policy, sandbox and store) driven by the Python SDK client, with the model
replaced by the loopback fake: text turns, edits behind a permission, the editor's
files and terminals, cancel, and a load in a fresh process."""

from __future__ import annotations

import asyncio
import json

import pytest
from acp.schema import ClientCapabilities, FileSystemCapabilities

from loopd.sessions.commands import CLEAR, COMPACT, CONTINUE, UNDO
from loopd.sessions.rewind import REWIND
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, loopd_acp, text
from tests.e2e.acp.editor import EDITOR_SECRET, EditorClient
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e

FS = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))


def sent_to_model(home: Home, index: int) -> str:
    """The JSON body of the `index`-th request the fake model got."""
    return json.dumps(home.fake.requests[index].body)


async def test_a_text_turn_streams_and_the_commands_follow_the_new_session(home: Home) -> None:
    home.fake.script("*", Reply(text="Hello from the model, in words.", pause_after=4, gate="on"))
    client = RecordingClient()
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=new.session_id, prompt=text("hi")))
        await asyncio.wait_for(client.replying.wait(), 30)
        shown_while_streaming = client.text()
        home.fake.release("on")
        result = await asyncio.wait_for(turn, 30)
    assert result.stop_reason == "end_turn"
    assert shown_while_streaming and shown_while_streaming != client.text()
    assert client.text() == "Hello from the model, in words."
    commands = client.of("available_commands_update")[0]["availableCommands"]
    assert commands == [
        {"name": c.name, "description": c.description}
        for c in (CLEAR, COMPACT, UNDO, CONTINUE, REWIND)
    ]
    assert "hi" in sent_to_model(home, 0)


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_an_edit_asks_with_its_diff_and_the_answer_decides(home: Home, answer: str) -> None:
    target = home.work / "a.py"
    target.write_text("x = 1\n")
    edit = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("read", {"path": "a.py"}),)),
        Reply(tool_calls=(ScriptedCall("edit", edit),)),
        Reply(text="finished"),
    )
    client = RecordingClient(answers=[answer])
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        result = await conn.prompt(session_id=new.session_id, prompt=text("bump x"))
    assert result.stop_reason == "end_turn"
    tool_call, _ = client.permissions[0]
    assert tool_call.title == "Edit a.py"
    diff = tool_call.model_dump(by_alias=True, exclude_none=True)["content"][0]
    assert diff == {**diff, "type": "diff", "path": str(target), "newText": "x = 2\n"}
    assert target.read_text() == ("x = 2\n" if answer == "allow_once" else "x = 1\n")
    final = client.of("tool_call_update")[-1]
    assert final["status"] == ("completed" if answer == "allow_once" else "failed")


async def test_the_editors_buffers_are_read_through_fs_and_edits_land_on_disk(
    home: Home,
) -> None:
    """The buffer is read through the editor (its path proven, nothing moved); the
    edit is handed to the editor to write, and as this one keeps it in its buffer,
    loopd writes it to the disk beneath the workspace too."""
    target = home.work / "a.py"
    target.write_text("on disk\n")
    edit = {"path": "a.py", "old_string": "unsaved buffer", "new_string": "edited buffer"}
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("read", {"path": "a.py"}),)),
        Reply(tool_calls=(ScriptedCall("edit", edit),)),
        Reply(text="done"),
    )
    client = EditorClient(answers=["allow_once"], buffers={str(target): "unsaved buffer\n"})
    async with loopd_acp(home, client, FS) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=text("edit it"))
    assert str(target) in client.reads
    assert "unsaved buffer" in sent_to_model(home, 1)  # the model saw the buffer
    assert client.writes == [(str(target), "edited buffer\n")]
    assert target.read_text() == "edited buffer\n"  # the buffer's text, edited


async def test_commands_run_in_the_editors_terminal_without_its_secrets(home: Home) -> None:
    command = 'echo "hello from $0"; echo "secret=[$EDITOR_SECRET] key=[$ANTHROPIC_API_KEY]"'
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("bash", {"command": command}),)),
        Reply(text="ran it"),
    )
    client = EditorClient(answers=["allow_once"])
    async with loopd_acp(home, client, ClientCapabilities(terminal=True)) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        result = await conn.prompt(session_id=new.session_id, prompt=text("run"))
    assert result.stop_reason == "end_turn"
    [(terminal_id, terminal)] = client.terminals.items()
    assert terminal.argv[0].endswith("env") and terminal.argv[1] == "-i"
    assert client.calls == ["create", "wait", "output", "release"]
    assert terminal.released
    shown = [u for u in client.of("tool_call_update") if u.get("content")]
    assert {"type": "terminal", "terminalId": terminal_id} in shown[0]["content"]
    seen = sent_to_model(home, 1)
    assert "hello from bash" in seen
    assert "secret=[] key=[]" in seen
    assert EDITOR_SECRET not in seen


async def test_cancel_while_the_reply_streams_then_the_next_turn_works(home: Home) -> None:
    home.fake.script(
        "*",
        Reply(text="one two three four five six", pause_after=4, gate="go"),
        Reply(text="next"),
    )
    client = RecordingClient()
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        sid = new.session_id
        turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=text("go")))
        await asyncio.wait_for(client.replying.wait(), 30)
        await conn.cancel(session_id=sid)
        cancelled = await asyncio.wait_for(turn, 30)
        home.fake.release("go")
        after = await conn.prompt(session_id=sid, prompt=text("again"))
    assert cancelled.stop_reason == "cancelled"
    assert after.stop_reason == "end_turn"
    assert client.text().endswith("next")


async def test_a_fresh_process_loads_and_replays_the_session(home: Home) -> None:
    home.fake.script("*", Reply(text="first answer"), Reply(text="second answer"))
    async with loopd_acp(home, RecordingClient()) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=text("first question"))

    client = RecordingClient()
    async with loopd_acp(home, client) as conn:
        await conn.load_session(cwd=str(home.work), session_id=new.session_id, mcp_servers=[])
        replayed = list(client.kinds())
        await conn.prompt(session_id=new.session_id, prompt=text("second question"))
    assert replayed[0] == "user_message_chunk"
    assert client.text("user_message_chunk") == "first question"
    assert client.text() == "first answersecond answer"
    second = sent_to_model(home, 1)
    assert "first question" in second and "first answer" in second


async def test_clear_and_compact_change_what_the_model_gets(home: Home) -> None:
    home.fake.script(
        "*",
        Reply(text="remembered"),
        Reply(text="fresh"),
        Reply(text="SUMMARY: the person asked about giraffes."),
        Reply(text="continued"),
    )
    client = RecordingClient()
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        sid = new.session_id
        for prompt in ("zebra question", "/clear", "giraffe question", "/compact", "go on"):
            result = await conn.prompt(session_id=sid, prompt=text(prompt))
            assert result.stop_reason == "end_turn"
    assert len(home.fake.requests) == 4
    assert "zebra" in sent_to_model(home, 0)
    assert "zebra" not in sent_to_model(home, 1)
    assert "User: giraffe question" in sent_to_model(home, 2)  # the summary's request
    last = sent_to_model(home, 3)
    assert "SUMMARY: the person asked about giraffes." in last
    assert "giraffe question" not in last
    assert home.fake.requests[3].body["system"] == home.fake.requests[0].body["system"]
