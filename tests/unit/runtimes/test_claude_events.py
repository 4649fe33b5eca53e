"""Claude Code stream-json -> loopd events, on lines recorded from the real CLI 2.1.197."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopd.mcp.config import McpServerConfig
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.events import (
    AgentMessageChunk,
    AgentThoughtChunk,
    DiffContent,
    EmbeddedResourceBlock,
    ImageBlock,
    Location,
    PlanEntry,
    PlanUpdated,
    Prompt,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    UsageUpdated,
)
from loopd.protocol.model import Usage
from loopd.runtimes.foreign import claude_events as ce
from loopd.runtimes.foreign import claude_tools as ct
from loopd.runtimes.foreign.claude import mcp_config

FIXTURES = Path(__file__).parent / "fixtures"
CWD = "/tmp/fscratch/w2"


def lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def translate_all(messages: list[dict[str, Any]], cwd: str = CWD) -> list[object]:
    translator = ce.ClaudeTranslator(cwd)
    return [event for m in messages for event in translator.translate(m)]


def test_thinking_text_and_an_allowed_write() -> None:
    events = translate_all(lines("claude_think_then_write.ndjson"), "/tmp/fscratch/w1")
    write_output = (
        "File created successfully at: /tmp/hello.txt "
        "(file state is current in your context — no need to Read it back)"
    )
    assert events == [
        AgentThoughtChunk("hmm", "msg_ef5b0db7"),
        AgentMessageChunk("he", "msg_ef5b0db7"),
        AgentMessageChunk("llo", "msg_ef5b0db7"),
        UsageUpdated(used=15, size=200_000, cost=0.000105),
        ToolCallStarted("toolu_631c22cd", "Write", "edit", "pending"),
        ToolCallUpdated(
            "toolu_631c22cd",
            title="Write /tmp/hello.txt",
            kind="edit",
            content=(DiffContent("/tmp/hello.txt", None, "hi\n"),),
            locations=(Location("/tmp/hello.txt"),),
            raw_input={"file_path": "/tmp/hello.txt", "content": "hi\n"},
        ),
        ToolCallUpdated(
            "toolu_631c22cd",
            status="completed",
            raw_output={
                "output": write_output,
                "type": "create",
                "filePath": "/tmp/hello.txt",
                "content": "hi\n",
                "structuredPatch": [],
                "originalFile": None,
                "userModified": False,
            },
        ),
        AgentMessageChunk("he", "msg_db125977"),
        AgentMessageChunk("llo", "msg_db125977"),
        UsageUpdated(used=15, size=200_000, cost=0.000315),
    ]


def test_failed_edit_denied_bash_unavailable_todo_and_an_interrupt() -> None:
    events = translate_all(lines("claude_edit_deny_todo_interrupt.ndjson"))
    edit_error = (
        "<tool_use_error>File has not been read yet. Read it first before writing to it."
        "</tool_use_error>"
    )
    path = f"{CWD}/hello.txt"
    expected_head = [
        ToolCallStarted("toolu_9b87e0af", "Edit", "edit", "pending"),
        ToolCallUpdated(
            "toolu_9b87e0af",
            title="Edit hello.txt",
            kind="edit",
            content=(DiffContent(path, "hi", "bye"),),
            locations=(Location(path),),
            raw_input={
                "replace_all": False,
                "file_path": path,
                "old_string": "hi",
                "new_string": "bye",
            },
        ),
        ToolCallUpdated(
            "toolu_9b87e0af",
            status="failed",
            content=(TextBlock(edit_error),),
            raw_output={"output": edit_error},
        ),
        AgentMessageChunk("he", "msg_7a5ef211"),
        AgentMessageChunk("llo", "msg_7a5ef211"),
        UsageUpdated(used=15, size=200_000, cost=0.00021),
        ToolCallStarted("toolu_88642c12", "Bash", "execute", "pending"),
        ToolCallUpdated(
            "toolu_88642c12",
            title=f"touch {CWD}/made.txt",
            kind="execute",
            content=(),
            locations=(),
            raw_input={"command": f"touch {CWD}/made.txt", "description": "make file"},
        ),
        ToolCallUpdated(
            "toolu_88642c12",
            status="failed",
            content=(TextBlock("nope"),),
            raw_output={"output": "nope"},
        ),
    ]
    assert events[: len(expected_head)] == expected_head
    # TodoWrite failed (not enabled in -p mode): no plan and no tool card for it.
    rest = events[len(expected_head) :]
    assert not [e for e in rest if isinstance(e, PlanUpdated | ToolCallStarted | ToolCallUpdated)]
    # The interrupted turn streamed its text before the interrupt, then the next turn ran.
    texts = [(e.text, e.message_id) for e in rest if isinstance(e, AgentMessageChunk)]
    assert texts[-4:] == [
        ("he", "msg_64ccefe8"),
        ("llo", "msg_64ccefe8"),
        ("he", "msg_f06f2758"),
        ("llo", "msg_f06f2758"),
    ]


def _todo_turn(is_error: bool) -> list[dict[str, Any]]:
    todos = [
        {"content": "a", "status": "in_progress", "activeForm": "doing a"},
        {"content": "b", "status": "pending", "activeForm": "doing b"},
    ]
    tool_use = {"type": "tool_use", "id": "toolu_t", "name": "TodoWrite", "input": {"todos": todos}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_t",
        "content": "ok",
        "is_error": is_error,
    }
    return [
        {
            "type": "stream_event",
            "event": {
                "type": "content_block_start",
                "index": 0,
                "content_block": {**tool_use, "input": {}},
            },
            "parent_tool_use_id": None,
        },
        {
            "type": "assistant",
            "message": {"id": "m1", "content": [tool_use]},
            "parent_tool_use_id": None,
        },
        {
            "type": "user",
            "message": {"role": "user", "content": [result]},
            "parent_tool_use_id": None,
        },
    ]


def test_a_successful_todo_write_is_the_plan_not_a_tool_card() -> None:
    assert translate_all(_todo_turn(is_error=False)) == [
        PlanUpdated((PlanEntry("a", "medium", "in_progress"), PlanEntry("b", "medium", "pending")))
    ]
    assert translate_all(_todo_turn(is_error=True)) == []


def test_an_unstreamed_synthetic_message_is_shown_once() -> None:
    synthetic = {
        "type": "assistant",
        "message": {
            "id": "01142d53",
            "model": "<synthetic>",
            "content": [
                {"type": "text", "text": "API Error: Unable to connect to API (ECONNRESET)"}
            ],
        },
        "parent_tool_use_id": None,
    }
    assert translate_all([synthetic]) == [
        AgentMessageChunk("API Error: Unable to connect to API (ECONNRESET)", "01142d53")
    ]


def test_subagent_text_is_not_shown_but_its_tool_calls_are() -> None:
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "x"},
    }
    inner = {
        "type": "assistant",
        "message": {
            "id": "m2",
            "content": [
                {"type": "text", "text": "inner"},
                {
                    "type": "tool_use",
                    "id": "toolu_r",
                    "name": "Read",
                    "input": {"file_path": "/w/a.py"},
                },
            ],
        },
        "parent_tool_use_id": "toolu_task",
    }
    events = translate_all(
        [{"type": "stream_event", "event": delta, "parent_tool_use_id": "toolu_task"}, inner], "/w"
    )
    assert events == [
        ToolCallStarted(
            "toolu_r",
            "Read a.py",
            "read",
            "pending",
            {"file_path": "/w/a.py"},
            (Location("/w/a.py"),),
        )
    ]


@pytest.mark.parametrize(
    ("name", "tool_input", "title", "kind"),
    [
        ("Bash", {"command": "make test"}, "make test", "execute"),
        ("Read", {"file_path": "/w/src/a.py", "offset": 10}, "Read src/a.py", "read"),
        ("Glob", {"pattern": "**/*.py", "path": "/w/src"}, "Find **/*.py in src", "search"),
        ("Grep", {"pattern": "TODO"}, "Search TODO", "search"),
        ("WebFetch", {"url": "https://x.org"}, "Fetch https://x.org", "fetch"),
        ("Task", {"description": "explore the repo"}, "explore the repo", "think"),
        ("mcp__github__create_issue", {}, "github: create_issue", "other"),
        ("ExitPlanMode", {"plan": "1. do it"}, "Ready to code?", "switch_mode"),
    ],
)
def test_tool_titles_and_kinds(
    name: str, tool_input: dict[str, Any], title: str, kind: str
) -> None:
    view = ct.tool_view(name, tool_input, "/w")
    assert (view.title, view.kind) == (title, kind)


def test_read_points_at_its_line() -> None:
    assert ct.tool_view("Read", {"file_path": "/w/a.py", "offset": 10}, "/w").locations == (
        Location("/w/a.py", 10),
    )


def _result(**fields: Any) -> dict[str, Any]:
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2}
    return {"type": "result", "subtype": "success", "is_error": False, "usage": usage, **fields}


@pytest.mark.parametrize(
    ("result", "cancelled", "stop", "error", "show"),
    [
        (_result(stop_reason="end_turn"), False, "end_turn", None, False),
        (_result(stop_reason="max_tokens"), False, "max_tokens", None, False),
        (_result(stop_reason="refusal"), False, "refusal", None, False),
        (_result(subtype="error_max_turns"), False, "max_turn_requests", None, False),
        (_result(subtype="error_during_execution", is_error=True), True, "cancelled", None, False),
        (
            _result(subtype="error_during_execution", errors=["No conversation found"]),
            False,
            "end_turn",
            "Claude Code: No conversation found",
            True,
        ),
        (
            _result(is_error=True, result="API Error: 400 bad"),
            False,
            "end_turn",
            "API Error: 400 bad",
            False,
        ),
    ],
)
def test_turn_end(
    result: dict[str, Any], cancelled: bool, stop: str, error: str | None, show: bool
) -> None:
    assert ce.turn_end(result, cancelled=cancelled) == ce.TurnEnd(
        stop,
        Usage(10, 5, 2, 0),
        error,
        show,  # type: ignore[arg-type]
    )


BASH_REQUEST = next(
    m["request"]
    for m in lines("claude_edit_deny_todo_interrupt.ndjson")
    if m["type"] == "control_request"
)


def test_a_permission_request_becomes_an_approval_question() -> None:
    question = ct.approval_request("s1", BASH_REQUEST, CWD)
    assert question.tool_call_id == "toolu_88642c12"
    assert (question.tool_name, question.kind) == ("Bash", "execute")
    assert question.title == f"touch {CWD}/made.txt"
    assert question.raw_input == BASH_REQUEST["input"]


def test_permission_answers() -> None:
    allow = ct.permission_answer(ApprovalDecision.ALLOW_ONCE, BASH_REQUEST)
    assert allow == {"behavior": "allow", "updatedInput": BASH_REQUEST["input"]}
    always = ct.permission_answer(ApprovalDecision.ALLOW_ALWAYS, BASH_REQUEST)
    assert always["updatedPermissions"] == BASH_REQUEST["permission_suggestions"]
    bare = {"tool_name": "Write", "input": {"file_path": "/w/x"}, "permission_suggestions": None}
    assert ct.permission_answer(ApprovalDecision.ALLOW_ALWAYS, bare)["updatedPermissions"] == [
        {
            "type": "addRules",
            "rules": [{"toolName": "Write"}],
            "behavior": "allow",
            "destination": "session",
        }
    ]
    for decision in (ApprovalDecision.REJECT_ONCE, ApprovalDecision.REJECT_ALWAYS):
        assert ct.permission_answer(decision, BASH_REQUEST)["behavior"] == "deny"
    cancelled = ct.permission_answer(ApprovalDecision.CANCELLED, BASH_REQUEST)
    assert cancelled["behavior"] == "deny" and cancelled["interrupt"] is True


def test_user_message_carries_every_block() -> None:
    prompt = Prompt(
        (
            TextBlock("fix it"),
            ImageBlock("aGk=", "image/png"),
            EmbeddedResourceBlock("file:///w/a.py", "x = 1"),
        )
    )
    assert ce.user_message(prompt)["message"]["content"] == [
        {"type": "text", "text": "fix it"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}},
        {"type": "text", "text": '<context ref="file:///w/a.py">\nx = 1\n</context>'},
    ]


def test_mcp_servers_pass_through() -> None:
    servers = (
        McpServerConfig("fs", command="mcp-fs", args=("--root", "/w"), env={"A": "1"}),
        McpServerConfig("web", url="http://127.0.0.1:9/mcp", headers={"X": "y"}),
    )
    assert mcp_config(servers) == {
        "mcpServers": {
            "fs": {
                "type": "stdio",
                "command": "mcp-fs",
                "args": ["--root", "/w"],
                "env": {"A": "1"},
            },
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}},
        }
    }
