"""`loopd lsp` with a client that opted into the ACP-shaped extension."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from loopd.protocol.events import Prompt, TextBlock
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager
from tests.e2e.lsp.conftest import Start, until


def text_prompt(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


async def test_initialize_answers_what_the_extension_supports(start: Start) -> None:
    editor = await start({})
    assert editor.server is not None
    caps = editor.server.capabilities
    loopd = caps.experimental["loopd"]
    assert "loopd/session/prompt" in loopd["requests"]
    assert loopd["sessionUpdate"] == "loopd/session/update"
    assert loopd["requestPermission"] == "loopd/session/requestPermission"
    assert {"loopd.ask", "loopd.cancel", "loopd.approve", "loopd.status"} <= set(
        caps.execute_command_provider.commands
    )
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental


async def test_a_prompt_streams_acp_updates(start: Start) -> None:
    editor = await start({"replies": [{"thinking": "hmm", "text": "hello there you"}]})
    session_id = await editor.new_session()
    result = await editor.request(
        "loopd/session/prompt", {"sessionId": session_id, "prompt": text_prompt("say hello")}
    )
    assert result["stopReason"] == "end_turn"
    assert editor.texts() == "hello there you"
    assert editor.texts("agent_thought_chunk") == "hmm"
    assert all(set(u) == {"sessionId", "update"} for u in editor.updates)
    assert {u["sessionId"] for u in editor.updates} == {session_id}
    ends = editor.progress_ends()
    assert ends == ["end_turn"]


@pytest.mark.parametrize(("answer", "ran"), [("allow_once", ["ls -la"]), ("reject_once", [])])
async def test_approvals_through_request_permission(
    start: Start, answer: str, ran: list[str]
) -> None:
    script = {
        "replies": [{"tools": [["c1", "bash", {"command": "ls -la"}]]}, {"text": "done"}],
        "ask": ["bash"],
    }
    editor = await start(script)
    editor.answers.append(answer)
    session_id = await editor.new_session()
    await editor.request(
        "loopd/session/prompt", {"sessionId": session_id, "prompt": text_prompt("list")}
    )
    (asked,) = editor.permission_requests
    assert asked["sessionId"] == session_id
    assert asked["toolCall"]["toolCallId"] == "c1"
    assert asked["toolCall"]["title"] == "Run `ls -la`"
    assert [o["optionId"] for o in asked["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert editor.executed() == ran
    statuses = [u["update"].get("status") for u in editor.updates if "toolCallId" in u["update"]]
    assert statuses[-1] == ("completed" if ran else "failed")


async def test_cancel_request_cancels_the_turn(start: Start) -> None:
    editor = await start({"replies": [{"text": "working on it", "hold": True}, {"text": "next"}]})
    session_id = await editor.new_session()
    params = {"sessionId": session_id, "prompt": text_prompt("long")}
    pending = editor.client.protocol.send_request("loopd/session/prompt", params, msg_id="p1")
    await until(lambda: "working on it" in editor.texts())
    editor.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="p1"))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(pending), 10)
    await until(lambda: editor.progress_ends() == ["cancelled"])
    status = await editor.command("loopd.status")
    assert [t["stopReason"] for t in status["turns"]] == ["cancelled"]
    again = await editor.request("loopd/session/prompt", {**params, "prompt": text_prompt("go")})
    assert again["stopReason"] == "end_turn"


async def test_cancel_notification_cancels_the_turn(start: Start) -> None:
    editor = await start({"replies": [{"text": "working", "hold": True}]})
    session_id = await editor.new_session()
    prompt = asyncio.ensure_future(
        editor.request(
            "loopd/session/prompt", {"sessionId": session_id, "prompt": text_prompt("x")}
        )
    )
    await until(lambda: "working" in editor.texts())
    editor.client.protocol.notify("loopd/session/cancel", {"sessionId": session_id})
    assert (await asyncio.wait_for(prompt, 10))["stopReason"] == "cancelled"


async def test_a_cancelled_turn_withdraws_its_open_question(start: Start) -> None:
    script = {
        "replies": [{"tools": [["c1", "bash", {"command": "rm -rf build"}]]}],
        "ask": ["bash"],
    }
    editor = await start(script)
    reply = await editor.command("loopd.ask", {"prompt": "clean"})
    await until(lambda: editor.permission_requests)
    cancelled = await editor.command("loopd.cancel", {"turnId": reply["turnId"]})
    assert cancelled["cancelled"] == [reply["turnId"]]
    await until(lambda: editor.withdrawn == ["c1"])
    await until(lambda: editor.progress_ends() == ["cancelled"])
    assert editor.executed() == []


async def test_a_session_from_another_manager_loads_here(tmp_path: Path, start: Start) -> None:
    other = scripted_manager(tmp_path, ScriptedProvider.of(Reply(text="from zed")))
    link = RecordingLink()
    view = await other.new_session(str(tmp_path), link)
    await other.prompt(view.id, Prompt((TextBlock("hi from acp"),)), link)
    await other.shutdown()

    editor = await start({"replies": [{"text": "and from lsp"}]})
    listed = await editor.request("loopd/session/list", {"cwd": str(tmp_path)})
    assert [s["sessionId"] for s in listed["sessions"]] == [view.id]
    assert listed["sessions"][0]["title"] == "hi from acp"
    loaded = await editor.request(
        "loopd/session/load", {"sessionId": view.id, "cwd": str(tmp_path), "mcpServers": []}
    )
    assert {o["id"] for o in loaded["configOptions"]} >= {"mode", "model"}
    assert editor.texts("agent_message_chunk") == "from zed"
    assert editor.kinds()[0] == "user_message_chunk"
    await editor.request(
        "loopd/session/prompt", {"sessionId": view.id, "prompt": text_prompt("more")}
    )
    assert editor.texts().endswith("and from lsp")


async def test_config_options_and_bad_params(start: Start) -> None:
    editor = await start({})
    session_id = await editor.new_session()
    result = await editor.request(
        "loopd/session/setConfigOption",
        {"sessionId": session_id, "configId": "mode", "value": "plan"},
    )
    assert {o["id"]: o["currentValue"] for o in result["configOptions"]}["mode"] == "plan"
    with pytest.raises(Exception, match="yolo"):
        await editor.request(
            "loopd/session/setConfigOption",
            {"sessionId": session_id, "configId": "mode", "value": "yolo"},
        )
    with pytest.raises(Exception, match="missing field 'sessionId'"):
        await editor.request("loopd/session/prompt", {"prompt": text_prompt("x")})
    with pytest.raises(Exception, match="not open on this connection"):
        await editor.request(
            "loopd/session/prompt", {"sessionId": "nope", "prompt": text_prompt("x")}
        )
    assert (await editor.request("loopd/session/close", {"sessionId": session_id})) == {}


async def test_delete_removes_a_session_from_the_store_and_the_connection(
    tmp_path: Path, start: Start
) -> None:
    editor = await start({"replies": [{"text": "hello"}]})
    kept, gone = await editor.new_session(), await editor.new_session()
    await editor.request("loopd/session/prompt", {"sessionId": gone, "prompt": text_prompt("hi")})
    assert (await editor.request("loopd/session/delete", {"sessionId": gone})) == {}
    listed = await editor.request("loopd/session/list", {"cwd": str(tmp_path)})
    assert [s["sessionId"] for s in listed["sessions"]] == [kept]
    with pytest.raises(Exception, match="not open"):
        await editor.request(
            "loopd/session/prompt", {"sessionId": gone, "prompt": text_prompt("x")}
        )
    with pytest.raises(Exception, match="no session"):
        await editor.request("loopd/session/delete", {"sessionId": gone})
    with pytest.raises(Exception, match="no session"):
        await editor.request(
            "loopd/session/load", {"sessionId": gone, "cwd": str(tmp_path), "mcpServers": []}
        )


async def test_steer_and_cancel_one_queued_prompt(start: Start) -> None:
    script = {"replies": [{"text": "working", "hold": True}, {"text": "steered"}, {"text": "c"}]}
    editor = await start(script)
    session_id = await editor.new_session()

    def prompt(text: str, msg_id: str) -> Any:
        params = {"sessionId": session_id, "prompt": text_prompt(text)}
        return editor.client.protocol.send_request("loopd/session/prompt", params, msg_id=msg_id)

    first = prompt("a", "p1")
    await until(lambda: "working" in editor.texts())
    second, third = prompt("b", "p2"), prompt("c", "p3")
    await until(lambda: "[Queued: 'c' runs after 2 turns.]" in editor.texts())
    status = await editor.command("loopd.status")
    assert [t["state"] for t in status["turns"]] == ["running", "queued", "queued"]
    editor.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="p2"))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(second), 10)
    steered = await editor.command("loopd.steer", {"text": "only the tests"})
    assert steered == {"sessionId": session_id}
    assert (await asyncio.wait_for(asyncio.wrap_future(first), 10))["stopReason"] == "end_turn"
    assert (await asyncio.wait_for(asyncio.wrap_future(third), 10))["stopReason"] == "end_turn"
    assert "only the tests" in editor.texts("user_message_chunk")
    assert editor.texts().endswith("steeredc")
    with pytest.raises(Exception, match="send it as a prompt"):
        await editor.request("loopd/session/steer", {"sessionId": session_id, "text": "hi?"})
