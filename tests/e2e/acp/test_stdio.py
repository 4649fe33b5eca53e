"""The real `loopd acp` spoken to raw: error probes, `$/cancel_request`, a cancel
during a pending permission, and a kill -9 mid-turn followed by a load in a new
process."""

from __future__ import annotations

import asyncio
import json
import signal

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, RawAgent, prompt_params, raw_loopd, update_of

pytestmark = pytest.mark.e2e

# A write of a new file: it needs approval, and nothing refuses it before it is asked.
EDIT = ScriptedCall("write", {"path": "a.py", "content": "2\n"}, id="e1")


async def test_error_paths_answer_and_never_kill_the_process(home: Home) -> None:
    async with raw_loopd(home) as agent:
        await error_paths(home, agent)


async def error_paths(home: Home, agent: RawAgent) -> None:
    """What the raw probes check, on `agent`'s stdio (also run through `--remote`)."""
    await agent.initialized()
    bad, _ = await agent.request("session/prompt", {"sessionId": 3, "prompt": "x"})
    assert bad["error"]["code"] == -32602
    unknown, _ = await agent.request("_loopd/nothing", {})
    assert unknown["error"]["code"] == -32601
    no_mcp, _ = await agent.request("session/new", {"cwd": str(home.work)})
    assert no_mcp["error"]["code"] == -32602
    relative, _ = await agent.request("session/new", {"cwd": "work", "mcpServers": []})
    assert relative["error"]["code"] == -32602
    await agent.send_line("{this is not json")
    await agent.send_line('[{"jsonrpc": "2.0", "id": 99, "method": "session/list"}]')
    await agent.send_line("")
    alive, _ = await agent.request("session/list", {})
    assert alive["result"] == {"sessions": []}
    await agent.send({"method": "_loopd/ping", "params": {}})  # unknown notification
    await agent.send({"method": "session/cancel", "params": {"sessionId": "nope"}})
    still, _ = await agent.request("session/new", {"cwd": str(home.work), "mcpServers": []})
    assert still["result"]["sessionId"]
    assert agent.proc.stdin is not None
    agent.proc.stdin.close()
    assert await asyncio.wait_for(agent.proc.wait(), 30) == 0
    for line in agent.lines:  # stdout carried only JSON-RPC lines
        assert json.loads(line)["jsonrpc"] == "2.0"


async def test_cancel_request_for_a_prompt_answers_request_cancelled(home: Home) -> None:
    home.fake.script("*", Reply(text="one two three four", pause_after=4, gate="go"))
    home.fake.script("*", Reply(text="next"))
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        await agent.send({"id": 50, "method": "session/prompt", "params": prompt_params(sid, "go")})
        await agent.until(lambda m: update_of(m).get("sessionUpdate") == "agent_message_chunk")
        await agent.send({"method": "$/cancel_request", "params": {"requestId": 50}})
        cancelled, _ = await agent.until_response(50)
        assert cancelled["error"]["code"] == -32800
        home.fake.release("go")
        after, _ = await agent.request("session/prompt", prompt_params(sid, "again"))
        assert after["result"]["stopReason"] == "end_turn"


async def test_session_cancel_during_a_pending_permission(home: Home) -> None:
    home.fake.script("*", Reply(tool_calls=(EDIT,)))
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        await agent.send({"id": 60, "method": "session/prompt", "params": prompt_params(sid, "go")})
        asked = await agent.until(lambda m: m.get("method") == "session/request_permission")
        await agent.send({"method": "session/cancel", "params": {"sessionId": sid}})
        await agent.send({"id": asked["id"], "result": {"outcome": {"outcome": "cancelled"}}})
        response, _ = await agent.until_response(60)
    assert response["result"]["stopReason"] == "cancelled"
    assert not (home.work / "a.py").exists()


async def test_kill_9_mid_turn_then_load_in_a_new_process(home: Home) -> None:
    """What was shown before the kill is replayed; the tool call that never finished
    is closed as failed; the session takes a new turn."""
    home.fake.script("*", Reply(text="editing now", tool_calls=(EDIT,)))
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        await agent.send({"id": 70, "method": "session/prompt", "params": prompt_params(sid, "go")})
        await agent.until(lambda m: m.get("method") == "session/request_permission")
        agent.proc.send_signal(signal.SIGKILL)
        await agent.proc.wait()

    home.fake.script("*", Reply(text="resumed"))
    async with raw_loopd(home) as agent:
        await agent.initialized()
        loaded, shown = await agent.request(
            "session/load", {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
        )
        assert "error" not in loaded
        updates = [update_of(m) for m in shown]
        kinds = [u["sessionUpdate"] for u in updates]
        assert kinds[0] == "user_message_chunk"
        assert "agent_message_chunk" in kinds and "tool_call" in kinds
        closing = [u for u in updates if u.get("toolCallId") == "e1"][-1]
        assert closing["status"] == "failed"  # closed on load, or by the daemon at the kill
        after, _ = await agent.request("session/prompt", prompt_params(sid, "again"))
        assert after["result"]["stopReason"] == "end_turn"
    assert not (home.work / "a.py").exists()
    # The model saw the interrupted call paired with an error result.
    assert '"tool_use_id": "e1"' in json.dumps(home.fake.requests[-1].body)
