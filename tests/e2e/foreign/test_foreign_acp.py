"""Claude Code and Codex chosen per session from an ACP client and driven through the
real `loopd acp`: the runtime is picked with `session/set_config_option`, and then
each CLI streams text, asks before a tool runs (the question reaches the client as
`session/request_permission`), runs it only when allowed, cancels mid-stream with
the next turn working, and continues its own conversation after the session is
loaded in a new `loopd acp` process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from acp.client.connection import ClientSideConnection

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, loopd_acp, text
from tests.e2e.foreign.conftest import Cli, cli_env, write_user_config
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e


@asynccontextmanager
async def loopd_with(home: Home, client: RecordingClient) -> AsyncIterator[ClientSideConnection]:
    async with loopd_acp(home, client, env=cli_env()) as conn:
        yield conn


async def new_session_on(conn: ClientSideConnection, home: Home, cli: Cli) -> tuple[str, Any]:
    """A new session switched to `cli`; its id and the options the switch returned."""
    new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
    options = await conn.set_config_option(
        config_id="runtime", session_id=new.session_id, value=cli.runtime
    )
    return new.session_id, options.model_dump(by_alias=True)["configOptions"]


def current(options: list[dict[str, Any]]) -> dict[str, str]:
    return {o["id"]: o["currentValue"] for o in options}


async def test_a_text_turn_streams_from_the_chosen_cli(home: Home, cli: Cli) -> None:
    home.fake.script("*", Reply(text="hello from the fake model", chunk=4))
    client = RecordingClient()
    async with loopd_with(home, client) as conn:
        sid, options = await new_session_on(conn, home, cli)
        result = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("hi")), 60)
    assert result.stop_reason == "end_turn"
    assert len(client.of("agent_message_chunk")) > 1, "the reply streams in several chunks"
    assert client.text() == "hello from the fake model"
    chosen = current(options)
    assert (chosen["runtime"], chosen["model"]) == (cli.runtime, cli.default_model)
    assert chosen["thought_level"] == "default"
    assert cli.default_model in home.fake.requests[0].body["model"]  # claude resolves aliases


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_a_tool_asks_the_client_and_runs_only_when_allowed(
    home: Home, cli: Cli, answer: str
) -> None:
    home.fake.script("*", Reply(tool_calls=(cli.touch("made.txt"),)), Reply(text="done"))
    client = RecordingClient(answers=[answer])
    async with loopd_with(home, client) as conn:
        sid, _ = await new_session_on(conn, home, cli)
        result = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("make it")), 90)
    [(tool_call, options)] = client.permissions
    assert "touch made.txt" in (tool_call.title or "")
    assert {"allow_once", "reject_once"} <= {o.kind for o in options}
    allowed = answer == "allow_once"
    assert (home.work / "made.txt").exists() == allowed
    statuses = [u.get("status") for u in client.of("tool_call_update") if u.get("status")]
    assert statuses[-1] == ("completed" if allowed else "failed")
    if allowed:
        assert result.stop_reason == "end_turn"
        assert client.text() == "done"


async def test_cancel_mid_stream_ends_cancelled_and_the_next_turn_works(
    home: Home, cli: Cli
) -> None:
    home.fake.script(
        "*",
        Reply(text="one two three four five six", pause_after=5, gate="never"),
        Reply(text="second turn"),
    )
    client = RecordingClient()
    async with loopd_with(home, client) as conn:
        sid, _ = await new_session_on(conn, home, cli)
        turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=text("talk slowly")))
        await asyncio.wait_for(client.replying.wait(), 60)
        await conn.cancel(session_id=sid)
        cancelled = await asyncio.wait_for(turn, 30)
        after = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("go on")), 60)
    assert cancelled.stop_reason == "cancelled"
    assert after.stop_reason == "end_turn"
    assert client.text().endswith("second turn")


async def test_a_new_loopd_process_continues_the_cli_conversation(home: Home, cli: Cli) -> None:
    home.fake.script("*", Reply(text="noted"), Reply(text="it was ALPHA"))
    async with loopd_with(home, RecordingClient()) as conn:
        sid, _ = await new_session_on(conn, home, cli)
        await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("remember ALPHA")), 60)

    client = RecordingClient()
    async with loopd_with(home, client) as conn:
        loaded = await conn.load_session(cwd=str(home.work), session_id=sid, mcp_servers=[])
        options = loaded.model_dump(by_alias=True)["configOptions"]
        result = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("which?")), 60)
    assert current(options)["runtime"] == cli.runtime
    assert result.stop_reason == "end_turn"
    assert client.text("user_message_chunk") == "remember ALPHA"  # the replay
    assert client.text().endswith("it was ALPHA")
    history = cli.texts(home.fake.requests[-1].body)
    assert any("remember ALPHA" in t for t in history)
    assert any("noted" in t for t in history)


async def test_a_crashing_cli_is_a_visible_message_and_a_stop_reason(home: Home) -> None:
    crash = home.root / "broken-claude"
    crash.write_text("#!/bin/sh\necho 'fatal: licence exploded' >&2\nexit 1\n")
    crash.chmod(0o755)
    config = f'[runtimes.broken]\nharness = "claude"\ncommand = "{crash}"\n'
    write_user_config(home, config)
    client = RecordingClient()
    async with loopd_with(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        await conn.set_config_option(config_id="runtime", session_id=new.session_id, value="broken")
        result = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("hi")), 30
        )
    assert result.stop_reason == "end_turn"
    shown = client.text()
    assert "Claude Code exited with code 1" in shown
    assert "licence exploded" in shown
    assert not home.fake.requests
