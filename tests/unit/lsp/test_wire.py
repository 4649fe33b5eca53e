"""The ACP-shaped JSON of the loopd LSP extension, and the transcript narration."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.workspace import TextDocument

from loopd.lsp.documents import minimal_edit
from loopd.lsp.narrate import Narrator
from loopd.lsp.wire import (
    BadParams,
    decision_from_outcome,
    decision_named,
    permission_params,
    prompt_from_wire,
)
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import DiffContent, EmbeddedResourceBlock, Prompt, TextBlock


def test_permission_params_are_acp_request_permission_params() -> None:
    request = ApprovalRequest(
        "s1",
        "c1",
        "write",
        "Write /a",
        "edit",
        {"path": "/a"},
        content=(DiffContent("/a", "x", "y"),),
    )
    assert permission_params(request) == {
        "sessionId": "s1",
        "toolCall": {
            "toolCallId": "c1",
            "status": "pending",
            "title": "Write /a",
            "kind": "edit",
            "content": [{"type": "diff", "path": "/a", "oldText": "x", "newText": "y"}],
            "rawInput": {"path": "/a"},
        },
        "options": [
            {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
            {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
        ],
    }


@pytest.mark.parametrize(
    ("reply", "decision"),
    [
        ({"outcome": {"outcome": "selected", "optionId": "allow_always"}}, "allow_always"),
        ({"outcome": {"outcome": "selected", "optionId": "reject_once"}}, "reject_once"),
        ({"outcome": {"outcome": "cancelled"}}, "cancelled"),
        ({"outcome": {"outcome": "selected", "optionId": "bogus"}}, "reject_once"),
        (None, "reject_once"),
        ("yes", "reject_once"),
    ],
)
def test_anything_but_an_explicit_allow_rejects(reply: object, decision: str) -> None:
    assert decision_from_outcome(reply) == ApprovalDecision(decision)


def test_dialog_titles_map_to_decisions() -> None:
    assert decision_named("Allow once") is ApprovalDecision.ALLOW_ONCE
    assert decision_named("Always allow") is ApprovalDecision.ALLOW_ALWAYS
    assert decision_named("Reject") is ApprovalDecision.REJECT_ONCE
    assert decision_named("Always reject") is ApprovalDecision.REJECT_ALWAYS
    assert decision_named(None) is ApprovalDecision.REJECT_ONCE


def test_prompts_parse_acp_content_blocks() -> None:
    prompt = prompt_from_wire(
        [
            {"type": "text", "text": "explain"},
            {"type": "resource", "resource": {"uri": "file:///a.py#L1", "text": "x = 1"}},
        ]
    )
    assert prompt == Prompt(
        (TextBlock("explain"), EmbeddedResourceBlock("file:///a.py#L1", "x = 1"))
    )
    for bad in ([], [{"type": "audio"}], [{"type": "text"}], "hi"):
        with pytest.raises(BadParams):
            prompt_from_wire(bad)


def test_the_narrator_gathers_chunks_into_lines_and_steps() -> None:
    narrator = Narrator()
    steps, lines = [], []
    for update in (
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello "}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "there"}},
        {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run `ls`", "status": "pending"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "in_progress"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"},
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "a", "status": "completed"}, {"content": "b"}],
        },
    ):
        told = narrator.feed(update)
        lines += told.lines
        steps += [told.step] if told.step else []
    assert lines == [
        "loopd (thinking): hm",
        "loopd: Hello there",
        "[tool] Run `ls` (pending)",
        "[tool] Run `ls`: completed",
        "[plan]",
        "  [x] a",
        "  [ ] b",
    ]
    assert steps == ["Thinking", "Writing", "Run `ls`", "Run `ls`: completed", "Plan 1/2"]


@pytest.mark.parametrize(
    ("old", "new", "start", "end", "text"),
    [
        ("x = 1\ny = 2\n", "x = 1\ny = 3\n", (1, 4), (1, 5), "3"),
        ("a\n", "a\nb\n", (1, 0), (1, 0), "b\n"),
        ("abc", "ab", (0, 2), (0, 3), ""),
        ("é = 1\n", "é = 2\n", (0, 4), (0, 5), "2"),
        ("same\n", "same\n", (1, 0), (1, 0), ""),
    ],
)
def test_minimal_edit_in_client_units(
    old: str, new: str, start: tuple[int, int], end: tuple[int, int], text: str
) -> None:
    doc = TextDocument("file:///a", old, position_codec=None)
    span, replacement = minimal_edit(doc, old, new)
    assert (span.start.line, span.start.character) == start
    assert (span.end.line, span.end.character) == end
    assert replacement == text
    assert isinstance(span, types.Range)
