"""What a session has spent, through the real `loopd acp` against the fake model:
`/clear` gives the model a fresh context, not the session a fresh budget, and a turn
cut by a kill -9 goes on, in the next process, under the guard it had (its actions
and the warning already given)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, RawAgent, prompt_params, raw_loopd, update_of
from tests.e2e.acp.test_single_writer import apart, load

pytestmark = pytest.mark.e2e


async def prompt(agent: RawAgent, sid: str, text: str) -> tuple[str, list[dict[str, Any]]]:
    response, seen = await agent.request("session/prompt", prompt_params(sid, text))
    return response["result"]["stopReason"], [update_of(m) for m in seen]


def costs(updates: list[dict[str, Any]]) -> list[float]:
    return [
        float(u["cost"]["amount"])
        for u in updates
        if u.get("sessionUpdate") == "usage_update" and u.get("cost")
    ]


def said(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["content"]["text"] for u in updates if u.get("sessionUpdate") == "agent_message_chunk"
    )


async def test_clear_keeps_the_sessions_running_cost(home: Home) -> None:
    home.fake.script("*", Reply(text="first"), Reply(text="second"))  # one price each
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        _, first = await prompt(agent, sid, "a question")
        assert (await prompt(agent, sid, "/clear"))[0] == "end_turn"
        _, second = await prompt(agent, sid, "another question")
    (once,), (twice,) = costs(first), costs(second)
    assert once > 0
    assert twice == pytest.approx(2 * once)


def globs(*patterns: str) -> Reply:
    return Reply(tool_calls=tuple(ScriptedCall("glob", {"pattern": p}) for p in patterns))


async def test_a_turn_cut_by_a_kill_goes_on_under_its_guard(home: Home) -> None:
    config = home.root / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[limits]\nmax_tool_calls = 5\n")
    home.fake.script(
        "*",
        globs("*.a", "*.b", "*.c", "*.d"),  # 4 of 5 actions: the one warning
        Reply(text="never finished", gate="held"),
        globs("*.e", "*.f"),  # in the next process: the 5th runs, the 6th is one too many
        Reply(text="should not be asked"),
    )
    async with raw_loopd(home, apart(home)) as first:
        sid = await first.new_session(home.work)
        await first.send({"id": 90, "method": "session/prompt", "params": prompt_params(sid, "x")})
        warned = await first.until(lambda m: "actions used" in str(update_of(m)))
        assert "4 of 5 actions used" in str(update_of(warned))
        async with asyncio.timeout(30):
            while len(home.fake.requests) < 2:  # the step is kept before it is sent  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        first.proc.kill()  # mid-turn, holding the second request
        await first.proc.wait()

    async with raw_loopd(home, apart(home)) as second:
        assert "result" in await load(second, home, sid)
        stop, updates = await prompt(second, sid, "go on")
    assert stop == "max_turn_requests"
    assert "Stopped by the loop guard: more than 5 actions" in said(updates)
    assert "actions used" not in said(updates)  # warned before the kill: not again
    assert len(home.fake.requests) == 3
