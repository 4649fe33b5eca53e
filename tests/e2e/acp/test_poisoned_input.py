"""A model that sends `NaN` or `Infinity` in a tool call's arguments cannot brick a
session: the call fails with a result the model reads, the next turn works, and so
does a reload in a fresh `loopd acp`. A journal row already poisoned by an older
loopd is repaired on load. All over real loopback HTTP, the real store and the
raw ACP wire."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from loopd.testing.fake_llm import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, prompt_params, raw_loopd, update_of

pytestmark = pytest.mark.e2e

POISON = [
    '{"path": NaN}',
    '{"path": "a", "offset": Infinity}',
    '{"offset": -Infinity}',
    '{"offset": 1e999}',
]


def wire_is_standard_json(line: str) -> bool:
    """No bare NaN/Infinity anywhere (json.loads would accept them)."""
    try:
        json.loads(line, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
    except ValueError:
        return False
    return True


def said(messages: list[dict[str, Any]]) -> str:
    updates = map(update_of, messages)
    chunks = [u for u in updates if u.get("sessionUpdate") == "agent_message_chunk"]
    return "".join(u["content"]["text"] for u in chunks)


async def reload_and_prompt(home: Home, sid: str) -> str:
    """Load `sid` in a fresh `loopd acp`, prompt once; what the agent said."""
    async with raw_loopd(home) as agent:
        await agent.initialized()
        loaded, _ = await agent.request(
            "session/load", {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
        )
        assert "error" not in loaded, loaded
        answer, seen = await agent.request("session/prompt", prompt_params(sid, "more"))
        assert answer["result"]["stopReason"] == "end_turn"
        assert all(wire_is_standard_json(line) for line in agent.lines)
    return said(seen)


@pytest.mark.parametrize("raw", POISON)
async def test_non_finite_arguments_fail_the_call_and_the_session_lives_on(
    home: Home, raw: str
) -> None:
    (home.work / "a").write_text("hello\n")
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("read", raw_arguments=raw),)),
        Reply(text="first done"),
        Reply(text="second turn fine"),
        Reply(text="after reload fine"),
    )
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        first, seen = await agent.request("session/prompt", prompt_params(sid, "go"))
        assert first["result"]["stopReason"] == "end_turn"
        failed = [u for u in map(update_of, seen) if u.get("status") == "failed"]
        assert len(failed) == 1
        second, _ = await agent.request("session/prompt", prompt_params(sid, "again"))
        assert second["result"]["stopReason"] == "end_turn"
        assert all(wire_is_standard_json(line) for line in agent.lines)

    assert "after reload fine" in await reload_and_prompt(home, sid)

    bodies = [r.body for r in home.fake.requests]
    assert len(bodies) == 4  # every request was sent, none failed to encode
    result = json.dumps(bodies[1]["messages"][-1])
    assert "not valid JSON" in result


async def test_a_journal_poisoned_by_an_older_loopd_still_loads_and_prompts(home: Home) -> None:
    home.fake.script("*", Reply(text="before"), Reply(text="after repair"))
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        done, _ = await agent.request("session/prompt", prompt_params(sid, "go"))
        assert done["result"]["stopReason"] == "end_turn"

    db = sqlite3.connect(home.root / "data" / "sessions.db")
    with db:  # what an older loopd wrote: a bare NaN, and a row that is not JSON at all
        tool_use = (
            '{"role":"assistant","parts":[{"type":"tool_use","id":"t1","name":"read",'
            '"input":{"offset":NaN}}]}'
        )
        result = '{"role":"user","parts":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}'
        for seq, body in ((100, tool_use), (101, result), (102, "{not json")):
            db.execute("INSERT INTO messages VALUES (?, ?, ?)", (sid, seq, body))
        db.execute("INSERT INTO events VALUES (?, ?, ?)", (sid, 100, '{"x": NaN'))
    db.close()

    assert "after repair" in await reload_and_prompt(home, sid)
    assert '"offset":"NaN"' in json.dumps(home.fake.requests[-1].body, separators=(",", ":"))
