"""Any ACP agent as a runtime, with a real one: `@agentclientprotocol/claude-agent-acp`
from npm (driving the pinned Claude Code CLI against the loopback fake model),
configured as `[runtimes.claude-acp] harness = "acp"` and chosen per session through
the real `loopd acp`. Its text streams to the editor; its questions pass loopd's mode
and then the editor's dialog; a rejection stops the tool; cancel ends the turn."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from acp.client.connection import ClientSideConnection

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, home, loopd_acp, text
from tests.e2e.conftest import CLIENTS, pinned_binary
from tests.unit.acp.conftest import RecordingClient

__all__ = ["home"]
pytestmark = pytest.mark.e2e
RUNTIME = "claude-acp"
LOOPD_RUN = [sys.executable, "-m", "loopd", "run"]


def configure(home: Home) -> None:
    agent = pinned_binary("claude-agent-acp")
    env = {
        "CLAUDE_CODE_EXECUTABLE": str(CLIENTS / "claude"),
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    config = home.root / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f"[runtimes.{RUNTIME}]\n"
        'harness = "acp"\n'
        f"command = {json.dumps(agent)}\n"
        "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }\n"
    )


@asynccontextmanager
async def on_the_agent(
    home: Home, client: RecordingClient
) -> AsyncIterator[tuple[ClientSideConnection, str]]:
    configure(home)
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        await conn.set_config_option(config_id="runtime", session_id=new.session_id, value=RUNTIME)
        yield conn, new.session_id


async def test_text_streams_from_the_acp_agent(home: Home) -> None:
    home.fake.script("*", Reply(text="hello through an ACP agent", chunk=5))
    client = RecordingClient()
    async with on_the_agent(home, client) as (conn, sid):
        result = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("hi")), 90)
    assert result.stop_reason == "end_turn"
    assert client.text() == "hello through an ACP agent"


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_its_questions_reach_the_editor_and_rule(home: Home, answer: str) -> None:
    touch = ScriptedCall("Bash", {"command": "touch made.txt", "description": "make it"})
    done = Reply(text="done")  # the answer after the tool, and the title Claude asks for
    home.fake.script("*", Reply(tool_calls=(touch,)), done, done)
    client = RecordingClient(answers=[answer])
    async with on_the_agent(home, client) as (conn, sid):
        await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("make it")), 90)
    [(tool_call, options)] = client.permissions
    assert "touch made.txt" in (tool_call.title or "")
    assert {"allow_once", "allow_always", "reject_once", "reject_always"} <= {
        o.kind for o in options
    }
    assert (home.work / "made.txt").exists() == (answer == "allow_once")


async def test_cancel_ends_the_turn_and_the_next_one_works(home: Home) -> None:
    home.fake.script(
        "*",
        Reply(text="one two three four five six", pause_after=4, gate="never"),
        Reply(text="second turn"),
        Reply(text="second turn"),  # or the title Claude asks for at a turn's end
    )
    client = RecordingClient()
    async with on_the_agent(home, client) as (conn, sid):
        turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=text("go")))
        await asyncio.wait_for(client.replying.wait(), 60)
        await conn.cancel(session_id=sid)
        first = await asyncio.wait_for(turn, 60)
        second = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("again")), 90)
    assert first.stop_reason == "cancelled"
    assert second.stop_reason == "end_turn"
    assert "second turn" in client.text()


async def test_a_new_loopd_process_loads_the_agent_session(home: Home) -> None:
    home.fake.script("*", *[Reply(text="noted")] * 4)  # Claude also asks for a title
    async with on_the_agent(home, RecordingClient()) as (conn, sid):
        await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("remember ALPHA")), 90)
    client = RecordingClient()
    async with loopd_acp(home, client) as conn:
        await conn.load_session(cwd=str(home.work), session_id=sid, mcp_servers=[])
        [replayed] = client.of("user_message_chunk")
        result = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("which?")), 90)
    assert replayed["content"]["text"] == "remember ALPHA"  # the history, from loopd's store
    assert result.stop_reason == "end_turn", client.text()
    turns = [r.body for r in home.fake.requests if r.body.get("tools")]  # not a title
    last = json.dumps(turns[-1]["messages"])
    assert "which?" in last
    assert "remember ALPHA" in last  # the agent loaded its own conversation


def test_loopd_run_uses_the_acp_agent(home: Home) -> None:
    home.fake.script("*", Reply(text="headless through ACP"), Reply(text="title"))
    configure(home)
    done = subprocess.run(
        [*LOOPD_RUN, "--runtime", RUNTIME, "--cwd", str(home.work), "say it"],
        env=home.env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "headless through ACP" in done.stdout
