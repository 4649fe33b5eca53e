"""A child ACP agent's updates as loopd events, and loopd's decision on its questions
before the person is asked."""

from __future__ import annotations

import pytest

from loopd.policy.modes import Mode
from loopd.protocol.events import (
    AgentMessageChunk,
    DiffContent,
    Location,
    PlanEntry,
    PlanUpdated,
    Prompt,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    UsageUpdated,
)
from loopd.runtimes.acp.modes import decide, stop_reason
from loopd.runtimes.acp.wire import event_of, options_of, paths_of, prompt_blocks


def test_updates_become_loopd_events() -> None:
    chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
             "content": {"type": "text", "text": "hi"}}  # fmt: skip
    assert event_of(chunk) == AgentMessageChunk("hi", "m1")
    call = {
        "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit a.py", "kind": "edit",
        "status": "pending", "locations": [{"path": "/w/a.py", "line": 3}],
        "content": [{"type": "diff", "path": "/w/a.py", "oldText": "x", "newText": "y"}],
    }  # fmt: skip
    assert event_of(call) == ToolCallStarted(
        "t1", "Edit a.py", "edit", "pending", None,
        (Location("/w/a.py", 3),), (DiffContent("/w/a.py", "x", "y"),),
    )  # fmt: skip
    done = {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
            "rawOutput": "ok"}  # fmt: skip
    assert event_of(done) == ToolCallUpdated("t1", "completed", raw_output={"output": "ok"})
    plan = {"sessionUpdate": "plan", "entries": [{"content": "a", "status": "in_progress"}]}
    assert event_of(plan) == PlanUpdated((PlanEntry("a", "medium", "in_progress"),))
    usage = {"sessionUpdate": "usage_update", "used": 5, "size": 100,
             "cost": {"amount": 0.5, "currency": "USD"}}  # fmt: skip
    assert event_of(usage) == UsageUpdated(5, 100, 0.5, "USD")
    assert event_of({"sessionUpdate": "available_commands_update"}) is None


def test_options_keep_selects_and_prompts_become_blocks() -> None:
    raw = [
        {"type": "select", "id": "model", "name": "Model", "category": "model",
         "currentValue": "a", "options": [{"value": "a", "name": "A"}, {"value": "b"}]},
        {"type": "boolean", "id": "fast", "name": "Fast", "currentValue": True},
    ]  # fmt: skip
    [model] = options_of(raw)
    assert (model.id, model.current_value, [c.value for c in model.choices]) == (
        "model", "a", ["a", "b"],
    )  # fmt: skip
    assert prompt_blocks(Prompt((TextBlock("go"),))) == [{"type": "text", "text": "go"}]
    call = {"locations": [{"path": "a.py"}], "content": [{"type": "diff", "path": "/etc/x",
            "newText": ""}]}  # fmt: skip
    assert paths_of(call, "/w") == ("/w/a.py", "/etc/x")


@pytest.mark.parametrize(
    ("mode", "kind", "inside", "expected"),
    [
        (Mode.ASK, "read", True, "allow"),
        (Mode.ASK, "read", False, "ask"),
        (Mode.ASK, "edit", True, "ask"),
        (Mode.ACCEPT_EDITS, "edit", True, "allow"),
        (Mode.ACCEPT_EDITS, "edit", False, "ask"),
        (Mode.ACCEPT_EDITS, "execute", True, "ask"),
        (Mode.READ_ONLY, "edit", True, "deny"),
        (Mode.READ_ONLY, "execute", True, "ask"),
        (Mode.FULL_AUTO, "edit", True, "allow"),
        (Mode.FULL_AUTO, "execute", True, "deny"),  # what would ask is refused
        (Mode.FULL_AUTO, "edit", False, "deny"),
    ],
)
def test_loopd_decides_before_the_person_is_asked(
    mode: Mode, kind: str, inside: bool, expected: str
) -> None:
    assert decide(mode, kind, ("/w/a.py",), inside) == expected


def test_an_edit_naming_no_file_is_asked() -> None:
    assert decide(Mode.ACCEPT_EDITS, "edit", (), True) == "ask"


def test_unknown_stop_reasons_end_the_turn() -> None:
    assert stop_reason("cancelled") == "cancelled"
    assert stop_reason("something_new") == "end_turn"
