"""CodexRuntime driving the REAL `codex app-server` (pinned in tests/clients) against the
loopback fake Responses server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.events import (
    AgentMessageChunk,
    ToolCallStarted,
    ToolCallUpdated,
    UsageUpdated,
)
from loopd.runtimes.foreign.codex import CodexProvider, CodexRuntimeFactory, CodexSettings
from loopd.testing.fake_llm import FakeLLMServer, Reply, ScriptedCall
from tests.e2e.conftest import responses_texts

from .conftest import BrokenEmitter, approver_of, one_turn, open_runtime, pinned_binary, say

pytestmark = pytest.mark.e2e
MODEL = "gpt-5.5"  # a slug from codex's own catalog, or it drops apply_patch and warns


def settings(base_url: str, codex_home: Path, **timeouts: Any) -> CodexSettings:
    return CodexSettings(
        binary=pinned_binary("codex"),
        env={"FAKE_OPENAI_KEY": "sk-fake"},
        codex_home=str(codex_home),
        provider=CodexProvider("fake", base_url, "FAKE_OPENAI_KEY"),
        default_model=MODEL,
        **({"stall_timeout": 30.0, "cancel_timeout": 10.0} | timeouts),
    )


async def test_a_text_turn_streams(
    fake_llm: FakeLLMServer, workdir: Path, home_cache: Path
) -> None:
    fake_llm.script("*", Reply(text="hello from the fake model"))
    runtime, emitter = await open_runtime(
        CodexRuntimeFactory(settings(fake_llm.openai_base_url, home_cache)), workdir
    )
    try:
        outcome = await runtime.prompt(say("hi"))
    finally:
        await runtime.close()
    assert (outcome.stop_reason, outcome.error) == ("end_turn", None)
    assert len(emitter.of(AgentMessageChunk)) > 1, "the reply streams in several chunks"
    assert emitter.text == "hello from the fake model"
    assert emitter.of(UsageUpdated)
    assert runtime.state()["thread_id"]
    assert fake_llm.requests[0].body["model"] == MODEL


def _touch_turn(fake: FakeLLMServer) -> None:
    call = ScriptedCall("exec_command", {"cmd": "touch made.txt"})
    fake.script("*", Reply(tool_calls=(call,)), Reply(text="done"))


async def test_an_allowed_command_runs(
    fake_llm: FakeLLMServer, workdir: Path, home_cache: Path
) -> None:
    _touch_turn(fake_llm)
    approver = approver_of(ApprovalDecision.ALLOW_ONCE)
    s = settings(fake_llm.openai_base_url, home_cache)
    runtime, emitter = await open_runtime(CodexRuntimeFactory(s), workdir, approver)
    try:
        outcome = await runtime.prompt(say("make the file"))
    finally:
        await runtime.close()
    assert outcome.stop_reason == "end_turn"
    [question] = approver.requests
    assert (question.kind, question.title) == ("execute", "touch made.txt")
    assert (workdir / "made.txt").exists()
    [started] = emitter.of(ToolCallStarted)
    statuses = [u.status for u in emitter.of(ToolCallUpdated) if u.status]
    assert statuses == ["pending", "in_progress", "completed"]
    assert started.tool_call_id == question.tool_call_id
    assert emitter.text == "done"


async def test_a_rejected_command_does_not_run(
    fake_llm: FakeLLMServer, workdir: Path, home_cache: Path
) -> None:
    _touch_turn(fake_llm)
    approver = approver_of(ApprovalDecision.REJECT_ONCE)
    s = settings(fake_llm.openai_base_url, home_cache)
    runtime, emitter = await open_runtime(CodexRuntimeFactory(s), workdir, approver)
    try:
        outcome = await asyncio.wait_for(runtime.prompt(say("make the file")), 60)
    finally:
        await runtime.close()
    assert len(approver.requests) == 1
    assert not (workdir / "made.txt").exists()
    assert outcome.stop_reason in ("end_turn", "cancelled")
    assert [u.status for u in emitter.of(ToolCallUpdated) if u.status][-1] == "failed"


async def test_an_approval_that_fails_midway_refuses_and_never_leaves_codex_waiting(
    fake_llm: FakeLLMServer, workdir: Path, home_cache: Path
) -> None:
    """The person allowed the command, but showing that failed before the answer went
    out: codex is told no (fail closed) at once, instead of waiting for an answer
    until the stall timeout ends the turn."""
    _touch_turn(fake_llm)
    approver = approver_of(ApprovalDecision.ALLOW_ONCE)
    s = settings(fake_llm.openai_base_url, home_cache, stall_timeout=120.0)
    factory = CodexRuntimeFactory(s)
    runtime, _ = await open_runtime(factory, workdir, approver, emitter=BrokenEmitter())
    outcome = await one_turn(runtime, "make the file", within=60)
    assert len(approver.requests) == 1
    assert not (workdir / "made.txt").exists()
    assert outcome.error is None
    assert outcome.stop_reason in ("end_turn", "cancelled")  # codex offered only `cancel`


async def test_full_auto_never_asks_and_stays_inside_the_workspace_sandbox(
    fake_llm: FakeLLMServer, workdir: Path, home_cache: Path
) -> None:
    """loopd's full_auto under Codex: approval `never` with the workspace-write
    sandbox. A command inside the workspace runs unasked; one writing outside it is
    refused by the sandbox, also unasked, and never runs with full access."""
    outside = home_cache / "outside.txt"
    calls = (
        ScriptedCall("exec_command", {"cmd": "touch made.txt"}, id="in"),
        ScriptedCall("exec_command", {"cmd": f"touch {outside}"}, id="out"),
    )
    fake_llm.script("*", Reply(tool_calls=calls[:1]), Reply(tool_calls=calls[1:]), Reply(text="ok"))
    approver = approver_of(ApprovalDecision.ALLOW_ONCE)
    s = settings(fake_llm.openai_base_url, home_cache)
    runtime, _ = await open_runtime(CodexRuntimeFactory(s), workdir, approver, mode="full_auto")
    outcome = await one_turn(runtime, "make both files")
    assert outcome.stop_reason == "end_turn"
    assert approver.requests == [], "full_auto never asks"
    assert (workdir / "made.txt").exists()
    assert not outside.exists(), "outside the workspace: refused, not run with full access"
    turn = fake_llm.requests[0].body
    assert turn.get("model") == MODEL


async def test_cancel_mid_stream_then_the_next_turn_works(
    fake_llm: FakeLLMServer, workdir: Path, home_cache: Path
) -> None:
    fake_llm.script(
        "*",
        Reply(text="one two three four five six", pause_after=5, gate="never"),
        Reply(text="second turn"),
    )
    runtime, emitter = await open_runtime(
        CodexRuntimeFactory(settings(fake_llm.openai_base_url, home_cache)), workdir
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


async def test_a_reopened_runtime_resumes_the_thread(
    fake_llm: FakeLLMServer, workdir: Path, home_cache: Path
) -> None:
    fake_llm.script("*", Reply(text="noted"), Reply(text="it was ALPHA"))
    s = settings(fake_llm.openai_base_url, home_cache)
    first, _ = await open_runtime(CodexRuntimeFactory(s), workdir)
    try:
        await first.prompt(say("remember the word ALPHA"))
        state = dict(first.state())
    finally:
        await first.close()
    second, emitter = await open_runtime(CodexRuntimeFactory(s), workdir, state=state)
    try:
        outcome = await second.prompt(say("what was the word?"))
    finally:
        await second.close()
    assert outcome.stop_reason == "end_turn"
    assert emitter.text == "it was ALPHA"
    history = responses_texts(fake_llm.requests[-1].body)
    assert "remember the word ALPHA" in history
    assert second.state() == state


async def test_an_unreachable_model_ends_the_turn(workdir: Path, home_cache: Path) -> None:
    s = settings("http://127.0.0.1:9/v1", home_cache, max_reconnects=0)
    runtime, emitter = await open_runtime(CodexRuntimeFactory(s), workdir)
    try:
        outcome = await asyncio.wait_for(runtime.prompt(say("hi")), 60)
    finally:
        await runtime.close()
    assert outcome.stop_reason == "end_turn"
    assert outcome.error and "cannot reach" in outcome.error
    assert emitter.text == outcome.error


async def test_a_missing_cli_is_a_visible_message(workdir: Path, tmp_path: Path) -> None:
    runtime, emitter = await open_runtime(
        CodexRuntimeFactory(CodexSettings(binary=str(tmp_path / "nope"))), workdir
    )
    outcome = await runtime.prompt(say("hi"))
    await runtime.close()
    assert outcome.error and "nope" in outcome.error
    assert emitter.text == outcome.error
