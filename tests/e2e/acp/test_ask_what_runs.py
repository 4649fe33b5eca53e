"""Only what can run is put to the person: a call the tools would refuse anyway (a
write to an existing file the agent never read, an edit of a missing file or of
text the file does not hold once, a read of the kernel's files, a FIFO or a device)
is refused without a permission request, in ask mode, through the real `loopd acp`."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

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


def asked(seen: list[dict[str, Any]]) -> list[str]:
    """The tool call ids the person was asked about."""
    requests = [m for m in seen if m.get("method") == "session/request_permission"]
    return [m["params"]["toolCall"]["toolCallId"] for m in requests]


def last_status(seen: list[dict[str, Any]], call_id: str) -> str:
    updates = [u for u in map(update_of, seen) if u.get("toolCallId") == call_id]
    return str([u["status"] for u in updates if u.get("status")][-1])


READ_A = ScriptedCall("read", {"path": "a.txt"}, id="r1")
UNRUNNABLE = {
    "an edit of a file that is not there": (
        (), ScriptedCall("edit", {"path": "gone.txt", "old_string": "a", "new_string": "b"}),
        "gone.txt does not exist",
    ),
    "an edit whose text the file does not hold": (
        (READ_A,), ScriptedCall("edit", {"path": "a.txt", "old_string": "z", "new_string": "y"}),
        "old_string was not found in a.txt",
    ),
    "an edit whose text the file holds twice": (
        (READ_A,), ScriptedCall("edit", {"path": "a.txt", "old_string": "he", "new_string": "y"}),
        "old_string occurs 2 times in a.txt",
    ),
    "a read of a file the kernel makes up": (
        (), ScriptedCall("read", {"path": "/proc/self/environ"}),
        "a file the kernel makes up",
    ),
    "a read of a FIFO outside the folders": (
        (), ScriptedCall("read", {"path": "../pipe"}), "is a named pipe (FIFO)",
    ),
    "a read of a device": (
        (), ScriptedCall("read", {"path": "/dev/zero"}), "is a character device",
    ),
}  # fmt: skip


@pytest.mark.parametrize("first, call, reason", UNRUNNABLE.values(), ids=list(UNRUNNABLE))
async def test_a_call_that_would_be_refused_is_refused_unasked(
    home: Home, first: tuple[ScriptedCall, ...], call: ScriptedCall, reason: str
) -> None:
    """Each call here asks in ask mode (an edit; a read outside the folders), and each
    would be refused once approved: the refusal comes first, and nobody is asked."""
    (home.work / "a.txt").write_text("theirs here\n")
    os.mkfifo(home.root / "pipe")
    call = replace(call, id="c1")
    steps = [Reply(tool_calls=first)] if first else []
    home.fake.script("*", *steps, Reply(tool_calls=(call,)), Reply(text="ok"))
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        done, seen = await agent.request("session/prompt", prompt_params(sid, "go"), ALLOW)
        assert done["result"]["stopReason"] == "end_turn"
    assert asked(seen) == []
    assert last_status(seen, "c1") == "failed"
    assert reason in str(home.fake.requests[-1].body["messages"][-1])
    assert (home.work / "a.txt").read_text() == "theirs here\n"


async def test_an_edit_made_runnable_by_the_step_s_write_is_asked_and_runs(home: Home) -> None:
    """The check is made when the edit's turn to run comes, after the step's write
    created the file, not when the step was declared."""
    create = ScriptedCall("write", {"path": "new.txt", "content": "one\n"}, id="w1")
    edit = {"path": "new.txt", "old_string": "one", "new_string": "two"}
    change = ScriptedCall("edit", edit, id="e1")
    home.fake.script("*", Reply(tool_calls=(create, change)), Reply(text="ok"))
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        done, seen = await agent.request("session/prompt", prompt_params(sid, "go"), ALLOW)
        assert done["result"]["stopReason"] == "end_turn"
    assert asked(seen) == ["w1", "e1"]
    assert (home.work / "new.txt").read_text() == "two\n"
