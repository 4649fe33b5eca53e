"""A turn cut off by a crash (kill -9 of an in-process `loopd acp` mid-turn): the
session loads marked interrupted, `/continue` carries the turn on as a new one, and
once it has, the session loads like any other. Then the same through `loopd lsp`'s
`loopd/session/continue`."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, prompt_params, raw_loopd, update_of
from tests.e2e.conftest import LOOPD
from tests.e2e.lsp.conftest import Start, start

__all__ = ["start"]

pytestmark = pytest.mark.e2e

WRITE = ScriptedCall("write", {"path": "a.py", "content": "2\n"}, id="w1")
CUT = "previous turn was cut off"


def interrupted(messages: list[dict[str, Any]]) -> bool:
    chunks = [
        u for u in map(update_of, messages) if u.get("sessionUpdate") == "agent_message_chunk"
    ]
    return any(u.get("_meta", {}).get("loopd", {}).get("interrupted") for u in chunks)


async def crash_mid_turn(home: Home) -> str:
    """A session whose first turn dies with its process, waiting on an approval."""
    home.fake.script("*", Reply(text="writing now", tool_calls=(WRITE,)))
    async with raw_loopd(home, home.env(LOOPD_DAEMON="off")) as agent:
        sid = await agent.new_session(home.work)
        await agent.send({"id": 70, "method": "session/prompt", "params": prompt_params(sid, "go")})
        await agent.until(lambda m: m.get("method") == "session/request_permission")
        agent.proc.send_signal(signal.SIGKILL)
        await agent.proc.wait()
    return sid


async def load(agent: Any, home: Home, sid: str) -> list[dict[str, Any]]:
    await agent.initialized()
    params = {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
    loaded, shown = await agent.request("session/load", params)
    assert "error" not in loaded, loaded
    return list(shown)


async def test_a_cut_turn_loads_interrupted_and_continue_carries_it_on(home: Home) -> None:
    sid = await crash_mid_turn(home)
    home.fake.script("*", Reply(text="carried on"))
    async with raw_loopd(home) as agent:
        assert interrupted(await load(agent, home, sid))
        done, _ = await agent.request("session/prompt", prompt_params(sid, "/continue"))
        assert done["result"]["stopReason"] == "end_turn"
        again, seen = await agent.request("session/prompt", prompt_params(sid, "/continue"))
        assert again["result"]["stopReason"] == "end_turn"
        assert "Nothing to continue" in str(seen)
    assert CUT in str(home.fake.requests[-1].body["messages"][-1])
    assert len(home.fake.requests) == 2, "the second /continue asked the model nothing"
    async with raw_loopd(home) as agent:
        assert not interrupted(await load(agent, home, sid))


async def test_the_lsp_continue_method_carries_a_cut_turn_on(start: Start, home: Home) -> None:
    sid = await crash_mid_turn(home)
    home.fake.script("*", Reply(text="carried on"))
    editor = await start({}, server=([*LOOPD, "lsp"], home.env()))
    await editor.request("loopd/session/load", {"sessionId": sid, "cwd": str(home.work)})
    done = await editor.request("loopd/session/continue", {"sessionId": sid})
    assert done["stopReason"] == "end_turn"
    assert CUT in str(home.fake.requests[-1].body["messages"][-1])
