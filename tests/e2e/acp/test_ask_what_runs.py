"""Only what can run is put to the person: a write the tools would refuse anyway
(an existing file the agent never read) is refused without a permission request,
in ask mode, through the real `loopd acp`."""

from __future__ import annotations

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, prompt_params, raw_loopd, update_of

pytestmark = pytest.mark.e2e

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def test_a_write_to_an_unread_file_is_refused_before_anyone_is_asked(home: Home) -> None:
    (home.work / "a.txt").write_text("theirs\n")
    write = ScriptedCall("write", {"path": "a.txt", "content": "mine\n"}, id="w1")
    home.fake.script("*", Reply(tool_calls=(write,)), Reply(text="ok"))
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        done, seen = await agent.request("session/prompt", prompt_params(sid, "go"), ALLOW)
        assert done["result"]["stopReason"] == "end_turn"
    assert not [m for m in seen if m.get("method") == "session/request_permission"]
    updates = [u for u in map(update_of, seen) if u.get("toolCallId") == "w1"]
    assert updates[-1]["status"] == "failed"
    assert (home.work / "a.txt").read_text() == "theirs\n"
    assert "read it first" in str(home.fake.requests[1].body["messages"][-1])
