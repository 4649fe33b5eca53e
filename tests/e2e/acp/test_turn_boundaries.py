"""Option changes made while a turn runs apply at the next turn (seed 001): the
running turn keeps the model, thinking and mode it started with, the editor is told
the change waits, and the next turn has it. Against the real `loopd acp`, the fake
model over loopback HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, RawAgent, prompt_params, raw_loopd, update_of

pytestmark = pytest.mark.e2e


def option(answer: dict[str, Any], option_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        o for o in answer["result"]["configOptions"] if o["id"] == option_id
    )
    return found


def streaming(message: dict[str, Any]) -> bool:
    return update_of(message).get("sessionUpdate") == "agent_message_chunk"


async def set_option(
    agent: RawAgent, sid: str, option_id: str, value: str
) -> tuple[dict[str, Any], str]:
    """Set an option: the answer, and what the agent said before it."""
    params = {"sessionId": sid, "configId": option_id, "value": value}
    answer, seen = await agent.request("session/set_config_option", params)
    assert "result" in answer, answer
    return answer, said(seen)


def said(messages: list[dict[str, Any]]) -> str:
    chunks = [
        u for u in map(update_of, messages) if u.get("sessionUpdate") == "agent_message_chunk"
    ]
    return "".join(u["content"]["text"] for u in chunks)


def script_a_read(home: Home, cwd: Path) -> None:
    """A first turn that reads a.txt, held at the gate `step` as it streams; then a
    second turn's reply."""
    (cwd / "a.txt").write_text("alpha\n")
    read = ScriptedCall("read", {"path": "a.txt"})
    home.fake.script(
        "*",
        Reply(text="reading it", tool_calls=(read,), pause_after=4, gate="step"),
        Reply(text="first done"),
        Reply(text="second done"),
    )


def script_two_writes(home: Home) -> None:
    """A first turn that writes b.txt, held at the gate `step` as it streams; a
    second that writes c.txt."""
    edit = ScriptedCall("write", {"path": "b.txt", "content": "beta\n"})
    again = ScriptedCall("write", {"path": "c.txt", "content": "gamma\n"})
    home.fake.script(
        "*",
        Reply(text="writing it", tool_calls=(edit,), pause_after=4, gate="step"),
        Reply(text="first done"),
        Reply(tool_calls=(again,)),
        Reply(text="second done"),
    )


async def test_thinking_switched_on_mid_turn_applies_at_the_next_turn(home: Home) -> None:
    script_a_read(home, home.work)
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        await agent.send({"id": 90, "method": "session/prompt", "params": prompt_params(sid, "go")})
        await agent.until(streaming)
        answer, told = await set_option(agent, sid, "thought_level", "high")
        shown = option(answer, "thought_level")
        assert shown["currentValue"] == "high"
        assert "next turn" in shown["description"]
        home.fake.release("step")
        assert "thought level high: applies from the next turn" in told
        first, _ = await agent.until_response(90)
        assert first["result"]["stopReason"] == "end_turn"
        second, _ = await agent.request("session/prompt", prompt_params(sid, "again"))
        assert second["result"]["stopReason"] == "end_turn"
    bodies = [r.body for r in home.fake.requests]
    assert len(bodies) == 3
    assert "thinking" not in bodies[0] and "thinking" not in bodies[1]  # the running turn
    assert bodies[2]["thinking"]["type"] == "enabled"  # the next one


async def test_a_mode_chosen_mid_turn_does_not_judge_that_turn_s_calls(home: Home) -> None:
    """Plan mode chosen while an accept-edits turn runs: the turn's write still runs
    under accept-edits; the next turn's write is refused by plan mode."""
    script_two_writes(home)
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        await set_option(agent, sid, "mode", "accept_edits")
        params = prompt_params(sid, "go")
        await agent.send({"id": 91, "method": "session/prompt", "params": params})
        await agent.until(streaming)
        await set_option(agent, sid, "mode", "plan")
        home.fake.release("step")
        first, _ = await agent.until_response(91)
        assert first["result"]["stopReason"] == "end_turn"
        assert (home.work / "b.txt").read_text() == "beta\n"
        second, _ = await agent.request("session/prompt", prompt_params(sid, "again"))
        assert second["result"]["stopReason"] == "end_turn"
    assert not (home.work / "c.txt").exists()


async def test_a_config_file_reloaded_mid_turn_leaves_the_open_session_alone(home: Home) -> None:
    """The user config changes the mode while a turn runs and loopd reads it again
    (`authenticate`, after a `loopd login`): the running turn and the open session
    keep the mode they had; a session opened after has the new one."""
    config = home.root / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[defaults]\nmode = "accept_edits"\n')
    script_two_writes(home)
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        await agent.send({"id": 92, "method": "session/prompt", "params": prompt_params(sid, "go")})
        await agent.until(streaming)
        config.write_text('[defaults]\nmode = "plan"\n')
        reloaded, _ = await agent.request("authenticate", {"methodId": "loopd-login"})
        assert reloaded["result"] == {}
        home.fake.release("step")
        first, _ = await agent.until_response(92)
        assert first["result"]["stopReason"] == "end_turn"
        second, _ = await agent.request("session/prompt", prompt_params(sid, "again"))
        assert second["result"]["stopReason"] == "end_turn"
        new, _ = await agent.request("session/new", {"cwd": str(home.work), "mcpServers": []})
        assert new["result"]["modes"]["currentModeId"] == "plan"
    assert (home.work / "b.txt").read_text() == "beta\n"
    assert (home.work / "c.txt").read_text() == "gamma\n"
