"""Tool calls, permissions, cancellation, replay and modes through the SDK."""

from __future__ import annotations

import asyncio
from pathlib import Path

from loopd.engine.ports import Verdict
from loopd.protocol.approvals import ApprovalDecision
from loopd.testing.fakes import FakeToolBox, Reply, ScriptedPolicy, ScriptedProvider
from loopd.testing.harness import scripted_manager
from tests.unit.acp.conftest import RecordingClient, connected, text

WRITE = Reply(tools=[("w1", "write", {"path": "/work/a.py"})])


def asking_manager(tmp_path: Path, *replies: Reply, tools: FakeToolBox | None = None):  # type: ignore[no-untyped-def]
    policy = ScriptedPolicy({"write": Verdict.ASK, "bash": Verdict.ASK})
    tools = tools or FakeToolBox()
    return scripted_manager(tmp_path, ScriptedProvider.of(*replies), tools, policy), tools, policy


async def test_an_allowed_tool_call_runs_and_shows_what_it_touches(tmp_path: Path) -> None:
    manager, tools, _ = asking_manager(tmp_path, WRITE, Reply(text="done"))
    client = RecordingClient(answers=["allow_once"])
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        result = await s.conn.prompt(session_id=new.session_id, prompt=text("write it"))
    assert result.stop_reason == "end_turn"
    assert tools.started == ["w1"]
    call, options = client.permissions[0]
    assert call.tool_call_id == "w1"
    assert call.title == "Write /work/a.py"
    assert call.kind == "edit"
    assert call.raw_input == {"path": "/work/a.py"}
    assert [o.kind for o in options] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    started = client.of("tool_call")[0]
    assert started["toolCallId"] == "w1" and started["rawInput"] == {"path": "/work/a.py"}
    assert client.of("tool_call_update")[-1]["status"] == "completed"
    assert client.text().endswith("done")


async def test_a_rejected_tool_call_never_runs(tmp_path: Path) -> None:
    manager, tools, _ = asking_manager(tmp_path, WRITE, Reply(text="ok, not writing"))
    client = RecordingClient(answers=["reject_once"])
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        result = await s.conn.prompt(session_id=new.session_id, prompt=text("write it"))
    assert result.stop_reason == "end_turn"
    assert tools.started == []
    assert client.of("tool_call_update")[-1]["status"] == "failed"


async def test_always_answers_reach_the_policy(tmp_path: Path) -> None:
    manager, tools, policy = asking_manager(tmp_path, WRITE, Reply(text="k"))
    client = RecordingClient(answers=["allow_always"])
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.prompt(session_id=new.session_id, prompt=text("write it"))
    assert policy.remembered == [("write", ApprovalDecision.ALLOW_ALWAYS)]
    assert tools.started == ["w1"]


async def test_cancel_while_streaming_answers_cancelled(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(text="a long answer", hold=asyncio.Event()))
    manager = scripted_manager(tmp_path, provider)
    client = RecordingClient()
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        turn = asyncio.create_task(s.conn.prompt(session_id=new.session_id, prompt=text("go")))
        await provider.started.wait()
        await s.conn.cancel(session_id=new.session_id)
        result = await asyncio.wait_for(turn, 5)
    assert result.stop_reason == "cancelled"


async def test_cancel_during_a_tool_answers_cancelled(tmp_path: Path) -> None:
    tools = FakeToolBox(hold=asyncio.Event())
    manager = scripted_manager(
        tmp_path, ScriptedProvider.of(Reply(tools=[("b1", "bash", {"command": "sleep 9"})])), tools
    )
    client = RecordingClient()
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        turn = asyncio.create_task(s.conn.prompt(session_id=new.session_id, prompt=text("go")))
        await tools.running.wait()
        await s.conn.cancel(session_id=new.session_id)
        result = await asyncio.wait_for(turn, 5)
    assert result.stop_reason == "cancelled"
    assert client.of("tool_call_update")[-1]["status"] == "failed"


async def test_cancel_during_a_pending_approval(tmp_path: Path) -> None:
    """The client sends session/cancel, then answers its open permission request with
    `cancelled`, as the protocol requires; the prompt answers `cancelled` and the
    tool never runs."""
    manager, tools, _ = asking_manager(tmp_path, WRITE)
    client = RecordingClient()  # no answers queued: holds the request
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        turn = asyncio.create_task(s.conn.prompt(session_id=new.session_id, prompt=text("go")))
        await client.asked.wait()
        await s.conn.cancel(session_id=new.session_id)
        client.release.set()
        result = await asyncio.wait_for(turn, 5)
        again = await s.conn.list_sessions()  # the connection is still healthy
    assert result.stop_reason == "cancelled"
    assert tools.started == []
    assert again.sessions


async def test_cancel_request_for_a_prompt_cancels_the_turn(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(text="held", hold=asyncio.Event()), Reply(text="next"))
    manager = scripted_manager(tmp_path, provider)
    client = RecordingClient()
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        turn = asyncio.create_task(s.conn.prompt(session_id=new.session_id, prompt=text("go")))
        await provider.started.wait()
        running = manager._live[new.session_id].turn
        assert running is not None
        turn.cancel()  # the SDK sends $/cancel_request for the in-flight request
        await asyncio.gather(turn, return_exceptions=True)
        assert (await asyncio.wait_for(running, 5)).stop_reason == "cancelled"
        result = await s.conn.prompt(session_id=new.session_id, prompt=text("again"))
    assert result.stop_reason == "end_turn"
    assert client.text().endswith("next")


async def test_load_replays_the_whole_history_before_answering(tmp_path: Path) -> None:
    first, _, _ = asking_manager(tmp_path, Reply(text="let me write"), WRITE, Reply(text="done"))
    async with connected(first, RecordingClient(answers=["allow_once"])) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.prompt(session_id=new.session_id, prompt=text("one"))
        await s.conn.prompt(session_id=new.session_id, prompt=text("two"))
    await first.shutdown()

    second = scripted_manager(tmp_path, ScriptedProvider.of())
    client = RecordingClient()
    async with connected(second, client) as s:
        loaded = await s.conn.load_session(
            session_id=new.session_id, cwd=str(tmp_path), mcp_servers=[]
        )
        shown_before_answer = len(client.updates)
    assert shown_before_answer == len(client.updates) > 0
    kinds = client.kinds()
    assert kinds[0] == "user_message_chunk"
    assert client.text("user_message_chunk") == "onetwo"
    assert client.text() == "let me writedone"
    assert "tool_call" in kinds and "tool_call_update" in kinds
    assert kinds.index("tool_call") > kinds.index("user_message_chunk", 1)
    assert loaded is not None and loaded.modes is not None


async def test_resume_attaches_without_replay(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of(Reply(text="hi"), Reply(text="yo")))
    async with connected(manager, RecordingClient()) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.prompt(session_id=new.session_id, prompt=text("one"))
    client = RecordingClient()
    async with connected(manager, client) as s:
        await s.conn.resume_session(session_id=new.session_id, cwd=str(tmp_path))
        assert client.updates == []
        await s.conn.prompt(session_id=new.session_id, prompt=text("two"))
    assert client.text() == "yo"


async def test_modes_and_config_options_stay_in_sync(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    client = RecordingClient()
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert new.modes is not None and new.config_options is not None
        mode = next(o for o in new.config_options if o.category == "mode")
        assert new.modes.current_mode_id == mode.current_value == "ask"
        assert [m.id for m in new.modes.available_modes] == [o.value for o in mode.options]  # type: ignore[union-attr]
        assert {o.id for o in new.config_options} == {
            "mode",
            "model",
            "thought_level",
            "runtime",
        }

        await s.conn.set_session_mode(session_id=new.session_id, mode_id="full_auto")
        assert client.of("current_mode_update")[-1]["currentModeId"] == "full_auto"
        options = client.of("config_option_update")[-1]["configOptions"]
        assert next(o for o in options if o["id"] == "mode")["currentValue"] == "full_auto"

        changed = await s.conn.set_config_option(
            session_id=new.session_id, config_id="mode", value="plan"
        )
        assert client.of("current_mode_update")[-1]["currentModeId"] == "plan"
        assert len(changed.config_options) == 4
        values = {o.id: o.current_value for o in changed.config_options}
        assert values["mode"] == "plan"

        for method, params in [
            ("session/set_config_option", {"configId": "mode", "value": "yolo"}),
            ("session/set_config_option", {"configId": "colour", "value": "red"}),
            ("session/set_config_option", {"configId": "mode", "type": "boolean", "value": True}),
            ("session/set_mode", {"modeId": "yolo"}),
        ]:
            try:
                await s.raw(method, {"sessionId": new.session_id, **params})
            except Exception as err:
                assert getattr(err, "code", None) == -32602, (method, params)
            else:
                raise AssertionError(f"{method} {params} was accepted")
    assert manager.store.get(new.session_id).config["mode"] == "plan"  # type: ignore[union-attr]


async def test_a_mode_alias_is_echoed_journaled_and_replayed_as_its_canonical_id(
    tmp_path: Path,
) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    client = RecordingClient()
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.set_session_mode(session_id=new.session_id, mode_id="accept-edits")
    mode = next(o for o in new.config_options or [] if o.id == "mode")
    modes = [o.value for o in mode.options]  # type: ignore[union-attr]
    changes = [k for k in client.kinds() if k in ("current_mode_update", "config_option_update")]
    assert changes == ["current_mode_update", "config_option_update"], "each sent once"
    [echo] = client.of("current_mode_update")
    assert echo["currentModeId"] == "accept_edits" in modes
    [update] = client.of("config_option_update")
    assert {o["id"]: o["currentValue"] for o in update["configOptions"]}["mode"] == "accept_edits"
    await manager.shutdown()

    replayed = RecordingClient()
    second = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(second, replayed) as s:
        loaded = await s.conn.load_session(
            session_id=new.session_id, cwd=str(tmp_path), mcp_servers=[]
        )
    assert [u["currentModeId"] for u in replayed.of("current_mode_update")] == ["accept_edits"]
    assert loaded.modes is not None and loaded.modes.current_mode_id == "accept_edits"
