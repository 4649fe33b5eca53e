"""`LoopdAgent` through the SDK: initialize, the session lifecycle, turns, errors."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest
from acp import Agent, RequestError
from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from loopd.acp.agent import LoopdAgent
from loopd.protocol.errors import ConfigError
from loopd.protocol.messages import ImagePart, TextPart
from loopd.sessions.commands import CLEAR, COMPACT, CONTINUE, UNDO
from loopd.sessions.manager import SessionManager
from loopd.store.sqlite import SessionRecord
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import scripted_manager
from tests.unit.acp.conftest import RecordingClient, connected, text


async def test_initialize_answers_our_version_and_honest_capabilities(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, RecordingClient()) as s:
        result = await s.raw("initialize", {"protocolVersion": 65535})
    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["name"] == "loopd"
    assert [m["id"] for m in result["authMethods"]] == ["loopd-login"]
    caps = result["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
    assert caps["mcpCapabilities"] == {"http": True, "sse": False}
    assert set(caps["sessionCapabilities"]) == {
        "list",
        "resume",
        "close",
        "delete",
        "additionalDirectories",
        "fork",
    }
    assert caps["auth"] == {"logout": {}}


def test_every_route_of_the_sdk_is_ours() -> None:
    """No inherited stub may answer `{}`: each routed method is overridden."""
    for attr, member in inspect.getmembers(Agent):
        if getattr(member, "__route__", None) is not None:
            assert getattr(LoopdAgent, attr) is not member, attr


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("providers/list", {}),
        ("_loopd/unknown", {}),
    ],
)
async def test_what_we_do_not_implement_is_method_not_found(
    tmp_path: Path, method: str, params: dict[str, object]
) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, RecordingClient()) as s:
        with pytest.raises(RequestError) as err:
            await s.raw(method, params)
    assert err.value.code == -32601


async def test_a_text_turn_streams_chunks_of_one_message(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of(Reply(text="hello there you")))
    client = RecordingClient()
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        result = await s.conn.prompt(session_id=new.session_id, prompt=text("say hello"))
    assert result.stop_reason == "end_turn"
    chunks = client.of("agent_message_chunk")
    assert "".join(c["content"]["text"] for c in chunks) == "hello there you"
    assert len({c["messageId"] for c in chunks}) == 1
    assert client.of("session_info_update")[0]["title"] == "say hello"
    assert all(sid == new.session_id for sid, _ in client.updates)


async def test_prompt_content_blocks_reach_the_model(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(text="ok"))
    manager = scripted_manager(tmp_path, provider)
    blocks = [
        TextContentBlock(type="text", text="look"),
        ResourceContentBlock(type="resource_link", uri="file:///a.py", name="a.py"),
        EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(uri="file:///b.py", text="print(1)"),
        ),
        ImageContentBlock(type="image", data="aGk=", mime_type="image/png"),
        EmbeddedResourceContentBlock(
            type="resource",
            resource=BlobResourceContents(uri="file:///c.png", blob="aGk=", mime_type="image/png"),
        ),
    ]
    async with connected(manager, RecordingClient()) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.prompt(session_id=new.session_id, prompt=blocks)
    parts = provider.requests[0].messages[-1].parts
    assert parts[0] == TextPart("look")
    assert "file:///a.py" in parts[1].text  # type: ignore[union-attr]
    assert "print(1)" in parts[2].text  # type: ignore[union-attr]
    assert parts[3] == ImagePart("image/png", "aGk=")
    assert parts[4] == ImagePart("image/png", "aGk=")


async def test_audio_was_not_advertised_and_is_invalid(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, RecordingClient()) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        with pytest.raises(RequestError) as err:
            await s.raw(
                "session/prompt",
                {
                    "sessionId": new.session_id,
                    "prompt": [{"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}],
                },
            )
    assert err.value.code == -32602


async def test_a_failure_inside_a_turn_is_a_stop_reason_and_a_message(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())  # no reply: the model blows up
    client = RecordingClient()
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        result = await s.conn.prompt(session_id=new.session_id, prompt=text("hi"))
        assert "the turn failed" in client.text()
        again = await s.conn.list_sessions()  # still alive and answering
    assert result.stop_reason == "end_turn"
    assert [i.session_id for i in again.sessions] == [new.session_id]


async def test_unknown_sessions_are_resource_not_found(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, RecordingClient()) as s:
        for method, params in [
            ("session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}),
            ("session/load", {"sessionId": "nope", "cwd": str(tmp_path), "mcpServers": []}),
            ("session/resume", {"sessionId": "nope", "cwd": str(tmp_path)}),
            ("session/delete", {"sessionId": "nope"}),
            ("session/set_mode", {"sessionId": "nope", "modeId": "ask"}),
        ]:
            with pytest.raises(RequestError) as err:
                await s.raw(method, params)
            assert err.value.code == -32002, method


async def test_relative_cwd_and_missing_mcp_servers_are_invalid_params(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, RecordingClient()) as s:
        for params in [{"cwd": "rel", "mcpServers": []}, {"cwd": str(tmp_path)}]:
            with pytest.raises(RequestError) as err:
                await s.raw("session/new", params)
            assert err.value.code == -32602


async def test_list_pages_filters_and_names_sessions(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    for i in range(55):
        manager.store.create(
            SessionRecord(
                id=f"s{i:02d}",
                cwd=f"/w/{i % 2}",
                title=f"task {i}",
                created_at=f"2026-11-29T00:00:{i:02d}Z",
                updated_at=f"2026-11-29T00:00:{i:02d}Z",
            )
        )
    async with connected(manager, RecordingClient()) as s:
        first = await s.conn.list_sessions()
        rest = await s.conn.list_sessions(cursor=first.next_cursor)
        odd = await s.conn.list_sessions(cwd="/w/1")
        with pytest.raises(RequestError) as err:
            await s.conn.list_sessions(cursor="garbage")
    assert len(first.sessions) == 50 and first.next_cursor
    assert first.sessions[0].session_id == "s54"
    assert first.sessions[0].title == "task 54"
    assert first.sessions[0].updated_at == "2026-11-29T00:00:54Z"
    assert [i.session_id for i in rest.sessions] == ["s04", "s03", "s02", "s01", "s00"]
    assert rest.next_cursor is None
    assert {i.cwd for i in odd.sessions} == {"/w/1"}
    assert err.value.code == -32602


async def test_close_and_delete(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, RecordingClient()) as s:
        one = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        two = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.close_session(session_id=one.session_id)
        await s.conn.delete_session(session_id=two.session_id)
        listed = await s.conn.list_sessions()
    assert [i.session_id for i in listed.sessions] == [one.session_id]
    with pytest.raises(Exception, match="not open here"):
        manager.view(one.session_id)


async def test_available_commands_follow_the_session_new_response(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    client = RecordingClient()
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.list_sessions()  # a round trip: the update was sent before its answer
    wire = s.wire.received
    response = next(i for i, m in enumerate(wire) if m.get("result", {}).get("sessionId"))
    update = next(
        i
        for i, m in enumerate(wire)
        if m.get("params", {}).get("update", {}).get("sessionUpdate") == "available_commands_update"
    )
    assert response < update
    assert client.of("available_commands_update")[0]["availableCommands"] == [
        {"name": c.name, "description": c.description} for c in (CLEAR, COMPACT, UNDO, CONTINUE)
    ]
    assert wire[update]["params"]["sessionId"] == new.session_id


async def test_initialize_does_not_wait_for_the_manager(tmp_path: Path) -> None:
    starting: asyncio.Future[SessionManager] = asyncio.get_running_loop().create_future()
    # `connected` initializes: it would hang here if initialize waited for the manager.
    async with connected(starting, RecordingClient()) as s:
        opening = asyncio.create_task(s.conn.new_session(cwd=str(tmp_path), mcp_servers=[]))
        starting.set_result(scripted_manager(tmp_path, ScriptedProvider.of()))
        assert (await opening).session_id


async def test_a_failed_start_is_every_request_s_answer(tmp_path: Path) -> None:
    failed: asyncio.Future[SessionManager] = asyncio.get_running_loop().create_future()
    failed.set_exception(ConfigError("bad config.toml: line 3"))
    async with connected(failed, RecordingClient()) as s:
        with pytest.raises(RequestError) as err:
            await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.cancel(session_id="any")  # a notification: nothing to answer
        with pytest.raises(RequestError):
            await s.conn.list_sessions()
    assert err.value.data == {"details": "loopd could not start: bad config.toml: line 3"}
