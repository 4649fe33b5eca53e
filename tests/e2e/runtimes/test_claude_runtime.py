"""ClaudeRuntime driving the REAL Claude Code CLI (pinned in tests/clients) against the
loopback fake Anthropic server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.events import (
    AgentMessageChunk,
    ToolCallStarted,
    ToolCallUpdated,
    UsageUpdated,
)
from loopd.runtimes.foreign.claude import ClaudeRuntimeFactory, ClaudeSettings
from loopd.testing.fake_llm import FakeLLMServer, Reply, ScriptedCall
from tests.e2e.conftest import anthropic_texts

from .conftest import approver_of, one_turn, open_runtime, pinned_binary, say

pytestmark = pytest.mark.e2e
MODEL = "claude-sonnet-4-5"


def settings(fake: FakeLLMServer, home: Path, binary: str | None = None) -> ClaudeSettings:
    env = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    return ClaudeSettings(
        binary=binary or pinned_binary("claude"),
        env=env,
        default_model=MODEL,
        stall_timeout=30,
        cancel_timeout=10,
    )


async def test_a_text_turn_streams(fake_llm: FakeLLMServer, workdir: Path, tmp_path: Path) -> None:
    fake_llm.script("*", Reply(text="hello from the fake model"))
    runtime, emitter = await open_runtime(
        ClaudeRuntimeFactory(settings(fake_llm, tmp_path)), workdir
    )
    try:
        outcome = await runtime.prompt(say("hi"))
    finally:
        await runtime.close()
    assert (outcome.stop_reason, outcome.error) == ("end_turn", None)
    chunks = emitter.of(AgentMessageChunk)
    assert len(chunks) > 1, "the reply streams in several chunks"
    assert emitter.text == "hello from the fake model"
    assert emitter.of(UsageUpdated)
    assert runtime.state()["session_id"]
    assert fake_llm.requests[0].body["model"] == MODEL


def _touch_turn(fake: FakeLLMServer, target: Path) -> None:
    call = ScriptedCall("Bash", {"command": f"touch {target}", "description": "make a file"})
    fake.script("*", Reply(tool_calls=(call,)), Reply(text="done"))


async def test_an_allowed_tool_runs(fake_llm: FakeLLMServer, workdir: Path, tmp_path: Path) -> None:
    target = workdir / "made.txt"
    _touch_turn(fake_llm, target)
    approver = approver_of(ApprovalDecision.ALLOW_ONCE)
    runtime, emitter = await open_runtime(
        ClaudeRuntimeFactory(settings(fake_llm, tmp_path)), workdir, approver
    )
    try:
        outcome = await runtime.prompt(say("make the file"))
    finally:
        await runtime.close()
    assert outcome.stop_reason == "end_turn"
    [question] = approver.requests
    assert (question.kind, question.title) == ("execute", f"touch {target}")
    assert target.exists()
    [started] = emitter.of(ToolCallStarted)
    finished = [u for u in emitter.of(ToolCallUpdated) if u.status == "completed"]
    assert [u.tool_call_id for u in finished] == [started.tool_call_id]
    assert emitter.text == "done"


async def test_a_rejected_tool_does_not_run(
    fake_llm: FakeLLMServer, workdir: Path, tmp_path: Path
) -> None:
    target = workdir / "made.txt"
    _touch_turn(fake_llm, target)
    approver = approver_of(ApprovalDecision.REJECT_ONCE)
    runtime, emitter = await open_runtime(
        ClaudeRuntimeFactory(settings(fake_llm, tmp_path)), workdir, approver
    )
    try:
        outcome = await runtime.prompt(say("make the file"))
    finally:
        await runtime.close()
    assert outcome.stop_reason == "end_turn"
    assert len(approver.requests) == 1
    assert not target.exists()
    assert [u.status for u in emitter.of(ToolCallUpdated) if u.status] == ["failed"]
    results = [
        b
        for m in fake_llm.requests[-1].body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert results and results[-1]["is_error"] is True


async def test_full_auto_refuses_what_would_ask_without_asking(
    fake_llm: FakeLLMServer, workdir: Path, tmp_path: Path
) -> None:
    """loopd's full_auto under Claude Code (which runs in its acceptEdits mode): nobody
    is asked; what it does unasked in the workspace runs, and what it would ask about
    (a write outside the workspace) is refused with the reason, as loopd's policy
    refuses it under the native engine."""
    inside, outside = workdir / "made.txt", tmp_path / "outside.txt"
    calls = [
        ScriptedCall("Bash", {"command": f"touch {path}", "description": "make it"}, id=name)
        for name, path in (("in", inside), ("out", outside))
    ]
    fake_llm.script("*", Reply(tool_calls=(calls[0],)), Reply(tool_calls=(calls[1],)))
    fake_llm.script("*", Reply(text="done"))
    approver = approver_of(ApprovalDecision.ALLOW_ONCE)
    factory = ClaudeRuntimeFactory(settings(fake_llm, tmp_path))
    runtime, emitter = await open_runtime(factory, workdir, approver, mode="full_auto")
    outcome = await one_turn(runtime, "make both files")
    assert outcome.stop_reason == "end_turn"
    assert approver.requests == [], "full_auto never asks"
    assert inside.exists()
    assert not outside.exists()
    statuses = {u.tool_call_id: u.status for u in emitter.of(ToolCallUpdated) if u.status}
    assert statuses == {"in": "completed", "out": "failed"}
    results = [
        b
        for m in fake_llm.requests[-1].body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    told = str(results[-1]["content"])
    assert results[-1]["is_error"] is True
    assert "full_auto mode" in told and f"touch {outside}" in told


async def test_cancel_mid_stream_then_the_next_turn_works(
    fake_llm: FakeLLMServer, workdir: Path, tmp_path: Path
) -> None:
    fake_llm.script(
        "*",
        Reply(text="one two three four five six", pause_after=3, gate="never"),
        Reply(text="second turn"),
    )
    runtime, emitter = await open_runtime(
        ClaudeRuntimeFactory(settings(fake_llm, tmp_path)), workdir
    )
    try:
        turn = asyncio.create_task(runtime.prompt(say("talk slowly")))
        async with asyncio.timeout(30):
            await emitter.wait_for(lambda evs: any(isinstance(e, AgentMessageChunk) for e in evs))
        await runtime.cancel()
        outcome = await asyncio.wait_for(turn, 30)
        assert outcome.stop_reason == "cancelled"
        emitter.events.clear()
        again = await runtime.prompt(say("go on"))
    finally:
        await runtime.close()
    assert again.stop_reason == "end_turn"
    assert emitter.text == "second turn"


async def test_a_reopened_runtime_resumes_the_conversation(
    fake_llm: FakeLLMServer, workdir: Path, tmp_path: Path
) -> None:
    fake_llm.script("*", Reply(text="noted"), Reply(text="it was ALPHA"))
    s = settings(fake_llm, tmp_path)
    first, _ = await open_runtime(ClaudeRuntimeFactory(s), workdir)
    try:
        await first.prompt(say("remember the word ALPHA"))
        state = dict(first.state())
    finally:
        await first.close()
    second, emitter = await open_runtime(ClaudeRuntimeFactory(s), workdir, state=state)
    try:
        outcome = await second.prompt(say("what was the word?"))
    finally:
        await second.close()
    assert outcome.stop_reason == "end_turn"
    assert emitter.text == "it was ALPHA"
    history = anthropic_texts(fake_llm.requests[-1].body)
    assert any("remember the word ALPHA" in t for t in history)
    assert second.state() == state


async def test_a_missing_cli_is_a_visible_message(workdir: Path, tmp_path: Path) -> None:
    s = ClaudeSettings(binary=str(tmp_path / "no-such-claude"))
    runtime, emitter = await open_runtime(ClaudeRuntimeFactory(s), workdir)
    outcome = await runtime.prompt(say("hi"))
    await runtime.close()
    assert outcome.stop_reason == "end_turn"
    assert outcome.error and "no-such-claude" in outcome.error
    assert emitter.text == outcome.error


async def test_a_crashing_cli_is_a_visible_message(workdir: Path, tmp_path: Path) -> None:
    crash = tmp_path / "claude"
    crash.write_text("#!/bin/sh\necho 'fatal: licence exploded' >&2\nexit 3\n")
    crash.chmod(0o755)
    runtime, emitter = await open_runtime(
        ClaudeRuntimeFactory(ClaudeSettings(binary=str(crash))), workdir
    )
    outcome = await asyncio.wait_for(runtime.prompt(say("hi")), 20)
    await runtime.close()
    assert outcome.error and "licence exploded" in outcome.error
    assert "code 3" in outcome.error
    assert emitter.text == outcome.error
