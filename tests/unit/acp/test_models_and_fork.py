"""The legacy model API beside the `model` config option, and `session/fork`."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from loopd.protocol.messages import TextPart
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import scripted_manager
from tests.unit.acp.conftest import RecordingClient, connected, text


def _model_option(result: dict) -> dict:  # type: ignore[type-arg]
    return next(o for o in result["configOptions"] if o["category"] == "model")


async def test_model_state_and_set_model_agree_with_the_config_option(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of(), models=("small", "large"))
    client = RecordingClient()
    async with connected(manager, client) as s:
        new = await s.raw("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["sessionId"]
        assert new["models"] == {
            "currentModelId": "small",
            "availableModels": [
                {"modelId": "small", "name": "small"},
                {"modelId": "large", "name": "large"},
            ],
        }
        assert _model_option(new)["currentValue"] == "small"

        assert await s.raw("session/set_model", {"sessionId": sid, "modelId": "large"}) == {}
        [changed] = client.of("config_option_update")
        assert _model_option(changed)["currentValue"] == "large"

        await s.raw(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "small"}
        )
        loaded = await s.raw(
            "session/resume", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        )
        assert loaded["models"]["currentModelId"] == "small"

        with pytest.raises(RequestError) as err:
            await s.raw("session/set_model", {"sessionId": sid, "modelId": "huge"})
        assert err.value.code == -32602
        with pytest.raises(RequestError) as missing:
            await s.raw("session/set_model", {"sessionId": "sess_nope", "modelId": "small"})
        assert missing.value.code == -32002


async def test_a_fork_continues_independently_of_its_parent(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(
        Reply(text="noted one"), Reply(text="parent two"), Reply(text="fork two")
    )
    manager = scripted_manager(tmp_path, provider)
    client = RecordingClient()
    async with connected(manager, client) as s:
        parent = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.prompt(session_id=parent.session_id, prompt=text("one"))
        fork = await s.raw(
            "session/fork",
            {"sessionId": parent.session_id, "cwd": str(tmp_path), "mcpServers": []},
        )
        assert fork["sessionId"] != parent.session_id
        assert fork["models"]["currentModelId"] == "scripted"
        await s.conn.prompt(session_id=parent.session_id, prompt=text("two for the parent"))
        await s.conn.prompt(session_id=fork["sessionId"], prompt=text("two for the fork"))

    def said(request_index: int) -> list[str]:
        messages = provider.requests[request_index].messages
        return [p.text for m in messages for p in m.parts if isinstance(p, TextPart)]

    assert said(1) == ["one", "noted one", "two for the parent"]
    assert said(2) == ["one", "noted one", "two for the fork"]
    listed = {r.id: r.title for r in manager.list_sessions().sessions}
    assert listed[fork["sessionId"]] == "Fork of one"
    replay = manager.store.events(fork["sessionId"])
    assert [e["content"]["text"] for e in replay if e["sessionUpdate"] == "user_message_chunk"] == [
        "one",
        "two for the fork",
    ]


async def test_forking_what_does_not_exist_is_not_found(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, RecordingClient()) as s:
        with pytest.raises(RequestError) as err:
            await s.raw("session/fork", {"sessionId": "sess_nope", "cwd": str(tmp_path)})
        with pytest.raises(RequestError) as relative:
            await s.raw("session/fork", {"sessionId": "sess_nope", "cwd": "here"})
    assert err.value.code == -32002
    assert relative.value.code == -32602
