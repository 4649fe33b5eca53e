"""codex app-server notifications -> loopd events, on lines recorded from codex 0.171.0."""

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
    Location,
    PlanEntry,
    PlanUpdated,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    UsageUpdated,
)
from loopd.runtimes.foreign import codex_events as cx
from loopd.runtimes.foreign.codex import mcp_overrides

FIXTURES = Path(__file__).parent / "fixtures"
CWD = "/tmp/fscratch/w4"


def lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def notifications(name: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (m["method"], m.get("params") or {}) for m in lines(name) if "method" in m and "id" not in m
    ]


def translate_all(pairs: list[tuple[str, dict[str, Any]]], cwd: str = CWD) -> list[object]:
    translator = cx.CodexTranslator(cwd)
    return [e for method, params in pairs for e in translator.translate(method, params)]


PYENV = "pyenv: cannot rehash: /root/.pyenv/shims isn't writable\n"
PATCHED = f"{CWD}/patched.txt"


def test_an_approved_command_and_an_approved_patch() -> None:
    usage = UsageUpdated(used=15, size=258_400)
    assert translate_all(notifications("codex_approvals.ndjson")) == [
        ToolCallStarted(
            "call_dbaba4df",
            "touch made_by_codex.txt",
            "execute",
            "in_progress",
            {"command": "/bin/bash -lc 'touch made_by_codex.txt'", "cwd": CWD},
        ),
        ToolCallUpdated(
            "call_dbaba4df",
            status="completed",
            content=(TextBlock(f"```\n{PYENV.rstrip()}\n```"),),
            raw_output={"exit_code": 0, "output": PYENV, "status": "completed"},
        ),
        usage,
        AgentMessageChunk("he", "msg_1"),
        AgentMessageChunk("llo", "msg_1"),
        usage,
        ToolCallStarted(
            "call_3414c18f",
            "Edit patched.txt",
            "edit",
            "in_progress",
            {"changes": [{"path": PATCHED, "kind": {"type": "add"}, "diff": "hello from patch\n"}]},
            (Location(PATCHED),),
            (DiffContent(PATCHED, None, "hello from patch\n"),),
        ),
        ToolCallUpdated("call_3414c18f", status="completed", raw_output={"status": "completed"}),
        usage,
        AgentMessageChunk("he", "msg_1"),
        AgentMessageChunk("llo", "msg_1"),
        usage,
    ]


def test_the_interrupted_turn_in_the_long_recording() -> None:
    messages = lines("codex_text_cmd_patch_interrupt.ndjson")
    completed = [m["params"]["turn"] for m in messages if m.get("method") == "turn/completed"]
    assert [cx.turn_end(t) for t in completed] == [("end_turn", None)] * 5 + [
        ("cancelled", None),
        ("end_turn", None),
    ]
    events = translate_all(
        notifications("codex_text_cmd_patch_interrupt.ndjson"), "/tmp/fscratch/w3"
    )
    # Every message streamed: none is repeated whole when its item completes.
    assert {e.text for e in events if isinstance(e, AgentMessageChunk)} == {"he", "llo"}


def test_a_failed_turn_names_its_error() -> None:
    turn = {"status": "failed", "error": {"message": "model overloaded"}}
    assert cx.turn_end(turn) == ("end_turn", "Codex: model overloaded")


def test_unstreamed_message_and_reasoning_are_shown_whole() -> None:
    events = translate_all(
        [
            ("item/completed", {"item": {"type": "reasoning", "id": "r1", "summary": ["think"]}}),
            ("item/completed", {"item": {"type": "agentMessage", "id": "m1", "text": "all"}}),
            ("item/reasoning/summaryTextDelta", {"itemId": "r2", "delta": "hm"}),
            ("item/completed", {"item": {"type": "reasoning", "id": "r2", "summary": ["hm"]}}),
        ]
    )
    assert events == [
        AgentThoughtChunk("think", "r1"),
        AgentMessageChunk("all", "m1"),
        AgentThoughtChunk("hm", "r2"),
    ]


def test_the_plan_and_a_declined_change() -> None:
    plan = [{"step": "a", "status": "inProgress"}, {"step": "b", "status": "pending"}]
    change = {
        "path": "/w/a.py",
        "kind": {"type": "update"},
        "diff": "@@ -1 +1 @@\n-x = 1\n+x = 2\n",
    }
    item = {"type": "fileChange", "id": "c1", "changes": [change], "status": "declined"}
    events = translate_all(
        [
            ("turn/plan/updated", {"plan": plan}),
            ("item/started", {"item": {**item, "status": "inProgress"}}),
            ("item/completed", {"item": item}),
        ]
    )
    assert events == [
        PlanUpdated((PlanEntry("a", "medium", "in_progress"), PlanEntry("b", "medium", "pending"))),
        ToolCallStarted(
            "c1",
            "Edit a.py",
            "edit",
            "in_progress",
            {"changes": [{**change}]},
            (Location("/w/a.py"),),
            (DiffContent("/w/a.py", "x = 1", "x = 2"),),
        ),
        ToolCallUpdated("c1", status="failed", raw_output={"status": "declined"}),
    ]


def test_a_read_command_is_a_read() -> None:
    item = {
        "type": "commandExecution",
        "command": "/bin/bash -lc 'cat a.py'",
        "commandActions": [{"type": "read", "command": "cat a.py", "name": "a.py", "path": "a.py"}],
    }
    view = cx.command_view(item, "/w")
    assert (view.title, view.kind, view.locations) == ("cat a.py", "read", (Location("/w/a.py"),))


def test_approval_questions_take_the_diff_from_the_started_item() -> None:
    messages = lines("codex_approvals.ndjson")
    translator = cx.CodexTranslator(CWD)
    questions = []
    for m in messages:
        if "id" in m and str(m.get("method", "")).endswith("requestApproval"):
            item = translator.items.get(m["params"]["itemId"])
            questions.append(cx.approval_request("s1", m["method"], m["params"], item, CWD))
        elif "method" in m:
            translator.translate(m["method"], m.get("params") or {})
    command, patch = questions
    assert (command.tool_name, command.kind, command.title) == (
        "shell",
        "execute",
        "touch made_by_codex.txt",
    )
    assert (patch.tool_name, patch.kind, patch.title) == ("apply_patch", "edit", "Edit patched.txt")
    assert patch.content == (DiffContent(PATCHED, None, "hello from patch\n"),)


AMEND = {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["touch", "x"]}}


@pytest.mark.parametrize(
    ("decision", "offered", "sent"),
    [
        (ApprovalDecision.ALLOW_ONCE, ["accept", AMEND, "cancel"], "accept"),
        (ApprovalDecision.ALLOW_ALWAYS, ["accept", AMEND, "cancel"], AMEND),
        (ApprovalDecision.ALLOW_ALWAYS, None, "acceptForSession"),
        (ApprovalDecision.ALLOW_ALWAYS, ["accept", "cancel"], "accept"),
        (ApprovalDecision.REJECT_ONCE, ["accept", "decline", "cancel"], "decline"),
        (ApprovalDecision.REJECT_ONCE, ["accept", AMEND, "cancel"], "cancel"),
        (ApprovalDecision.REJECT_ALWAYS, None, "decline"),
        (ApprovalDecision.CANCELLED, None, "cancel"),
    ],
)
def test_decisions_are_chosen_among_those_offered(
    decision: ApprovalDecision, offered: list[Any] | None, sent: Any
) -> None:
    assert cx.codex_decision(decision, offered) == sent


def test_modes_map_to_policy_and_sandbox() -> None:
    assert {m: (p.approval, p.sandbox) for m, p in cx.POLICIES.items()} == {
        "plan": ("on-request", "read-only"),
        "ask": ("untrusted", "workspace-write"),
        "accept_edits": ("on-request", "workspace-write"),
        "full_auto": ("never", "workspace-write"),
    }
    assert cx.sandbox_policy("workspace-write", ["/extra"]) == {
        "type": "workspaceWrite",
        "writableRoots": ["/extra"],
    }


def test_mcp_servers_become_config_overrides() -> None:
    servers = (
        McpServerConfig("fs", command="mcp-fs", args=("--root", "/w"), env={"A": "1"}),
        McpServerConfig("my web", url="http://127.0.0.1:9/mcp"),
    )
    assert mcp_overrides(servers) == [
        'mcp_servers.fs={command="mcp-fs",args=["--root", "/w"],env={A="1"}}',
        'mcp_servers."my web"={url="http://127.0.0.1:9/mcp",http_headers={}}',
    ]
