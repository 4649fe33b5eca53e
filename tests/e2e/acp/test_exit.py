"""The editor closes `loopd acp`'s stdin mid-turn: the process exits on its own (no
signal), and what it had shown is journaled with the turn closed, so a new process
replays it and goes on. The shutdown is prompt (the heap is frozen before the
interpreter's collections at exit; `benchmarks/warm_start.py` measures it), and
that must not cost a journaled event."""

from __future__ import annotations

import asyncio

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, prompt_params, raw_loopd, update_of

pytestmark = pytest.mark.e2e


def chunk(message: dict[str, object]) -> bool:
    return update_of(message).get("sessionUpdate") == "agent_message_chunk"


async def test_stdin_closed_mid_turn_exits_and_keeps_what_was_shown(home: Home) -> None:
    home.fake.script("*", Reply(text="one two three four", pause_after=4, gate="never"))
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        await agent.send({"id": 9, "method": "session/prompt", "params": prompt_params(sid, "go")})
        shown = update_of(await agent.until(chunk))
        assert agent.proc.stdin is not None
        agent.proc.stdin.close()
        assert await asyncio.wait_for(agent.proc.wait(), 30) == 0

    home.fake.script("*", Reply(text="resumed"))
    async with raw_loopd(home) as agent:
        await agent.initialized()
        params = {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
        loaded, replayed = await agent.request("session/load", params)
        assert "error" not in loaded
        updates = [update_of(m) for m in replayed]
        assert updates[0]["sessionUpdate"] == "user_message_chunk"
        assert updates[0]["content"]["text"] == "go"
        assert shown in updates  # the chunk on screen when stdin closed
        after, _ = await agent.request("session/prompt", prompt_params(sid, "again"))
        assert after["result"]["stopReason"] == "end_turn"
    assert "go" in str(home.fake.requests[-1].body["messages"])  # the model has the turn
