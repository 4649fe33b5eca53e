"""The ACP agent as a subprocess: raw-JSON probes, a Python SDK round trip,
`$/cancel_request`, and a kill -9 mid-turn followed by a load in a new process."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import ClientCapabilities, Implementation, TextContentBlock

from tests.e2e.acp.conftest import AGENT, RawAgent, agent_env, initialized, raw_agent
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def test_error_paths_answer_and_never_kill_the_process(tmp_path: Path) -> None:
    async with raw_agent(tmp_path, {}) as agent:
        await initialized(agent)
        bad, _ = await agent.request("session/prompt", {"sessionId": 3, "prompt": "x"})
        assert bad["error"]["code"] == -32602
        unknown, _ = await agent.request("_loopd/nothing", {})
        assert unknown["error"]["code"] == -32601
        no_mcp, _ = await agent.request("session/new", {"cwd": str(tmp_path)})
        assert no_mcp["error"]["code"] == -32602
        await agent.send_line("{this is not json")
        await agent.send_line('[{"jsonrpc": "2.0", "id": 99, "method": "session/list"}]')
        await agent.send_line("")
        alive, _ = await agent.request("session/list", {})
        assert alive["result"] == {"sessions": []}
        await agent.send({"method": "_loopd/ping", "params": {}})  # unknown notification
        await agent.send({"method": "session/cancel", "params": {"sessionId": "nope"}})
        still, _ = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert still["result"]["sessionId"]
        assert agent.proc.stdin is not None
        agent.proc.stdin.close()
        assert await asyncio.wait_for(agent.proc.wait(), 10) == 0
        assert agent.proc.stderr is not None
        stderr = (await agent.proc.stderr.read()).decode()
    assert "a stray print must not reach the protocol channel" in stderr
    for line in agent.lines:  # stdout carried only JSON-RPC lines
        assert json.loads(line)["jsonrpc"] == "2.0"


async def test_a_round_trip_with_the_python_sdk_client(tmp_path: Path) -> None:
    script = {
        "replies": [
            {"tools": [["w1", "write", {"path": str(tmp_path / "a.py")}]]},
            {"text": "done"},
        ],
        "ask": ["write"],
    }
    client = RecordingClient(answers=["allow_once"])
    async with spawn_agent_process(client, *AGENT, env=agent_env(tmp_path, script)) as (conn, _):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="py", version="0"),
        )
        new = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        result = await conn.prompt(
            session_id=new.session_id, prompt=[TextContentBlock(type="text", text="write")]
        )
    assert init.protocol_version == 1
    assert result.stop_reason == "end_turn"
    assert client.permissions[0][0].title == f"Write {tmp_path / 'a.py'}"
    assert client.text() == "done"
    assert client.kinds()[:3] == ["session_info_update", "usage_update", "tool_call"]


async def test_cancel_request_for_a_prompt_answers_request_cancelled(tmp_path: Path) -> None:
    script = {"replies": [{"text": "forever", "hold": True}, {"text": "next"}]}
    async with raw_agent(tmp_path, script) as agent:
        await initialized(agent)
        new, _ = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        await agent.send({"id": 50, "method": "session/prompt", "params": _prompt(sid, "go")})
        await _until_update(agent, "agent_message_chunk")
        await agent.send({"method": "$/cancel_request", "params": {"requestId": 50}})
        cancelled, _ = await agent.until_response(50)
        assert cancelled["error"]["code"] == -32800
        after, _ = await agent.request("session/prompt", _prompt(sid, "again"))
        assert after["result"]["stopReason"] == "end_turn"


async def test_session_cancel_during_a_pending_permission(tmp_path: Path) -> None:
    script = {"replies": [{"tools": [["w1", "write", {"path": "/w/a"}]]}], "ask": ["write"]}
    async with raw_agent(tmp_path, script) as agent:
        await initialized(agent)
        new, _ = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        await agent.send({"id": 60, "method": "session/prompt", "params": _prompt(sid, "go")})
        asked = await _until(agent, lambda m: m.get("method") == "session/request_permission")
        await agent.send({"method": "session/cancel", "params": {"sessionId": sid}})
        await agent.send({"id": asked["id"], "result": {"outcome": {"outcome": "cancelled"}}})
        response, _ = await agent.until_response(60)
    assert response["result"]["stopReason"] == "cancelled"


async def test_kill_9_mid_turn_then_load_in_a_new_process(tmp_path: Path) -> None:
    """What was shown before the kill is replayed; the tool call that never finished
    is closed as failed; the session takes a new turn."""
    script = {
        "replies": [{"text": "writing now", "tools": [["w1", "write", {"path": "/w/a"}]]}],
        "hold_tools": True,
    }
    async with raw_agent(tmp_path, script) as agent:
        await initialized(agent)
        new, _ = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        await agent.send({"id": 70, "method": "session/prompt", "params": _prompt(sid, "go")})
        await _until(agent, lambda m: _update(m).get("status") == "in_progress")
        agent.proc.send_signal(signal.SIGKILL)
        await agent.proc.wait()

    async with raw_agent(tmp_path, {"replies": [{"text": "resumed"}]}) as agent:
        await initialized(agent)
        loaded, shown = await agent.request(
            "session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        )
        assert "error" not in loaded
        updates = [_update(m) for m in shown]
        kinds = [u["sessionUpdate"] for u in updates]
        assert kinds[0] == "user_message_chunk"
        assert "agent_message_chunk" in kinds and "tool_call" in kinds
        assert updates[-1] == {**updates[-1], "toolCallId": "w1", "status": "failed"}
        after, _ = await agent.request("session/prompt", _prompt(sid, "again"))
        assert after["result"]["stopReason"] == "end_turn"


def _prompt(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


def _update(message: dict[str, Any]) -> dict[str, Any]:
    if message.get("method") != "session/update":
        return {}
    update: dict[str, Any] = message["params"]["update"]
    return update


async def _until(agent: RawAgent, predicate: Any) -> dict[str, Any]:
    while True:
        message = await agent.recv()
        if predicate(message):
            return message


async def _until_update(agent: RawAgent, kind: str) -> dict[str, Any]:
    return await _until(agent, lambda m: _update(m).get("sessionUpdate") == kind)
