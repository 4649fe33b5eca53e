"""Steering and the prompt queue through the real `loopd acp`, raw NDJSON: a word
sent with `_loopd/session/steer` interrupts the streaming reply and is read at the
next step; `$/cancel_request` for one queued prompt takes that prompt alone."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, RawAgent, prompt_params, raw_loopd, update_of

pytestmark = pytest.mark.e2e


async def until_update(agent: RawAgent, seen: list[dict[str, Any]], kind: str, text: str) -> None:
    while True:
        message = await agent.recv()
        seen.append(message)
        update = update_of(message)
        if update.get("sessionUpdate") == kind and text in json.dumps(update):
            return


async def test_steer_mid_stream_and_cancel_one_queued_prompt(home: Home) -> None:
    home.fake.script(
        "*",
        Reply(text="Rewriting the whole module now, then", pause_after=3, gate="long"),
        Reply(text="Understood: only the tests."),
        Reply(text="C answered."),
    )
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        seen: list[dict[str, Any]] = []
        await agent.send({"id": 10, "method": "session/prompt", "params": prompt_params(sid, "a")})
        await until_update(agent, seen, "agent_message_chunk", "Rewriting")
        await agent.send({"id": 11, "method": "session/prompt", "params": prompt_params(sid, "b")})
        await until_update(agent, seen, "agent_message_chunk", "[Queued: 'b'")
        await agent.send({"id": 12, "method": "session/prompt", "params": prompt_params(sid, "c")})
        await until_update(agent, seen, "agent_message_chunk", "[Queued: 'c' runs after 2")

        await agent.send({"method": "$/cancel_request", "params": {"requestId": 11}})
        steer = {"sessionId": sid, "text": "only touch the tests"}
        await agent.send({"id": 13, "method": "_loopd/session/steer", "params": steer})
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < 4:
            message = await agent.recv()
            seen.append(message)
            if message.get("id") in (10, 11, 12, 13) and "method" not in message:
                answers[message["id"]] = message

        assert answers[11]["error"]["code"] == -32800  # b alone was cancelled
        assert answers[13]["result"] == {}
        assert answers[10]["result"]["stopReason"] == "end_turn"
        assert answers[12]["result"]["stopReason"] == "end_turn"
        idle = {"sessionId": sid, "text": "anyone?"}
        refused, _ = await agent.request("_loopd/session/steer", idle)
        assert refused["error"]["code"] == -32600
        assert "send it as a prompt" in json.dumps(refused["error"])

    bodies = [json.dumps(r.body) for r in home.fake.requests]
    assert len(bodies) == 3
    after = home.fake.requests[1].body["messages"][1:]  # what it had said, then the word
    assert [m["role"] for m in after] == ["assistant", "user"]
    assert after[0]["content"][0]["text"] == "Rewriting"
    assert "only touch the tests" in after[1]["content"][0]["text"]
    assert all('"b"' not in body for body in bodies)
    shown = [update_of(m) for m in seen]
    said = [u["content"]["text"] for u in shown if u.get("sessionUpdate") == "user_message_chunk"]
    assert said == ["only touch the tests"]
