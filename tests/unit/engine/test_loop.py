"""The turn cycle against scripted streams, a fake clock and fake tools."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from loopd.engine.limits import Limits
from loopd.engine.loop import Engine, EngineConfig, EnginePorts
from loopd.engine.ports import ToolCall, ToolProgress, ToolResult, Verdict
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.errors import AuthError, ContextOverflow, Overloaded, RateLimited
from loopd.protocol.events import (
    AgentMessageChunk,
    AgentThoughtChunk,
    EmbeddedResourceBlock,
    Prompt,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    UsageUpdated,
)
from loopd.protocol.messages import Message, TextPart, ToolResultPart, ToolUsePart
from loopd.protocol.model import INVALID_JSON_KEY, Usage
from loopd.testing.fakes import (
    FakeClock,
    FakeToolBox,
    MemoryJournal,
    RecordingEmitter,
    Reply,
    ScriptedApprover,
    ScriptedPolicy,
    ScriptedProvider,
)


@dataclass
class Rig:
    provider: ScriptedProvider
    tools: FakeToolBox = field(default_factory=FakeToolBox)
    emitter: RecordingEmitter = field(default_factory=RecordingEmitter)
    approver: ScriptedApprover = field(default_factory=ScriptedApprover)
    policy: ScriptedPolicy = field(default_factory=ScriptedPolicy)
    journal: MemoryJournal = field(default_factory=MemoryJournal)
    clock: FakeClock = field(default_factory=FakeClock)
    limits: Limits = field(default_factory=Limits)

    def engine(self) -> Engine:
        counter = iter(range(10_000))
        ports = EnginePorts(
            self.provider,
            self.tools,
            self.emitter,
            self.approver,
            self.policy,
            self.journal,
            self.clock,
            new_id=lambda prefix: f"{prefix}_{next(counter)}",
            jitter=lambda: 0.0,
        )
        return Engine("s1", EngineConfig(model="m", limits=self.limits), ports)

    def updates(self, call_id: str) -> list[ToolCallUpdated]:
        return [e for e in self.emitter.of(ToolCallUpdated) if e.tool_call_id == call_id]

    def statuses(self, call_id: str) -> list[str]:
        return [u.status for u in self.updates(call_id) if u.status]


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


def results_of(message: Message) -> dict[str, ToolResultPart]:
    return {r.tool_use_id: r for r in message.tool_results}


async def test_text_only_turn_streams_chunks_and_ends() -> None:
    rig = Rig(ScriptedProvider.of(Reply(text="hello there", thinking="hmm")))
    engine = rig.engine()
    outcome = await engine.run(ask("hi"))

    assert outcome.stop_reason == "end_turn"
    assert outcome.iterations == 1
    assert outcome.usage == Usage(input_tokens=10, output_tokens=5)
    text = "".join(e.text for e in rig.emitter.of(AgentMessageChunk))
    assert text == "hello there"
    assert [e.text for e in rig.emitter.of(AgentThoughtChunk)] == ["hmm"]
    assert len({e.message_id for e in rig.emitter.of(AgentMessageChunk)}) == 1
    assert [m.role for m in engine.history] == ["user", "assistant"]
    assert rig.journal.messages == list(engine.history)
    assert rig.emitter.of(UsageUpdated) == [UsageUpdated(15, 200_000)]


async def test_tool_results_are_fed_back_in_the_next_request() -> None:
    rig = Rig(
        ScriptedProvider.of(
            Reply(text="looking", tools=[("t1", "read", {"path": "/w/a.py"})]),
            Reply(text="done"),
        )
    )
    engine = rig.engine()
    outcome = await engine.run(ask("read a.py"))

    assert outcome.stop_reason == "end_turn"
    assert outcome.iterations == 2
    second = rig.provider.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "user"]
    assert second[2].tool_results == (ToolResultPart("t1", "read ok"),)
    started = rig.emitter.of(ToolCallStarted)
    assert started == [ToolCallStarted("t1", "Read /w/a.py", "read", raw_input={"path": "/w/a.py"})]
    assert rig.statuses("t1") == ["in_progress", "completed"]


async def test_reads_run_in_parallel_and_results_keep_model_order() -> None:
    calls = [(f"r{i}", "read", {"path": f"/w/{i}"}) for i in range(3)]
    rig = Rig(ScriptedProvider.of(Reply(tools=calls), Reply(text="ok")))
    engine = rig.engine()
    await engine.run(ask("read all"))

    assert rig.tools.peak == 3
    results = engine.history[2].tool_results
    assert [r.tool_use_id for r in results] == ["r0", "r1", "r2"]


async def test_shell_commands_never_run_together() -> None:
    calls = [("b1", "bash", {"command": "make"}), ("b2", "bash", {"command": "make test"})]
    rig = Rig(ScriptedProvider.of(Reply(tools=calls), Reply(text="ok")))
    await rig.engine().run(ask("build"))
    assert rig.tools.peak == 1
    assert rig.tools.started == ["b1", "b2"]


async def test_identical_calls_trip_the_repeat_detector() -> None:
    same = ("bash", {"command": "false"})
    script = [Reply(tools=[(f"c{i}", *same)]) for i in range(5)]
    rig = Rig(ScriptedProvider.of(*script))
    engine = rig.engine()
    outcome = await engine.run(ask("go"))

    assert outcome.stop_reason == "max_turn_requests"
    assert rig.tools.started == ["c0", "c1"]
    third = results_of(engine.history[-1])["c2"]
    assert third.is_error and "3 times in a row" in third.content
    assert "3 times in a row" in rig.emitter.of(AgentMessageChunk)[-1].text


async def test_iteration_cap_ends_the_turn() -> None:
    script = [Reply(tools=[(f"c{i}", "read", {"path": f"/w/{i}"})]) for i in range(3)]
    rig = Rig(ScriptedProvider.of(*script), limits=Limits(max_iterations=2))
    outcome = await rig.engine().run(ask("go"))
    assert outcome.stop_reason == "max_turn_requests"
    assert outcome.iterations == 2
    assert len(rig.provider.requests) == 2


async def test_tool_call_cap_refuses_the_excess_and_ends_the_turn() -> None:
    calls = [(f"c{i}", "read", {"path": f"/w/{i}"}) for i in range(4)]
    rig = Rig(ScriptedProvider.of(Reply(tools=calls)), limits=Limits(max_tool_calls=3))
    engine = rig.engine()
    outcome = await engine.run(ask("go"))
    assert outcome.stop_reason == "max_turn_requests"
    results = results_of(engine.history[-1])
    assert [results[f"c{i}"].is_error for i in range(4)] == [False, False, False, True]


@pytest.mark.parametrize(
    ("answer", "ran"),
    [
        (ApprovalDecision.ALLOW_ONCE, True),
        (ApprovalDecision.ALLOW_ALWAYS, True),
        (ApprovalDecision.REJECT_ONCE, False),
        (ApprovalDecision.REJECT_ALWAYS, False),
    ],
)
async def test_approval_answers_decide_whether_a_call_runs(
    answer: ApprovalDecision, ran: bool
) -> None:
    rig = Rig(
        ScriptedProvider.of(Reply(tools=[("w1", "write", {"path": "/w/a"})]), Reply(text="ok")),
        approver=ScriptedApprover.of(answer),
        policy=ScriptedPolicy({"write": Verdict.ASK}),
    )
    engine = rig.engine()
    await engine.run(ask("write"))

    assert (rig.tools.started == ["w1"]) is ran
    request = rig.approver.requests[0]
    assert (request.title, request.kind, request.tool_call_id) == ("Write /w/a", "edit", "w1")
    assert rig.policy.remembered == [("write", answer)]
    result = results_of(engine.history[2])["w1"]
    assert result.is_error is not ran
    assert rig.statuses("w1")[-1] == ("completed" if ran else "failed")


async def test_policy_denial_is_a_result_and_nothing_runs() -> None:
    rig = Rig(
        ScriptedProvider.of(Reply(tools=[("b", "bash", {"command": "rm -rf /"})]), Reply()),
        policy=ScriptedPolicy({"bash": Verdict.DENY}),
    )
    engine = rig.engine()
    await engine.run(ask("clean"))
    assert rig.tools.started == []
    assert rig.approver.requests == []
    assert results_of(engine.history[2])["b"].content == "Denied by policy: bash policy"


async def test_bad_arguments_become_results_and_the_turn_goes_on() -> None:
    rig = Rig(
        ScriptedProvider.of(
            Reply(tools=[("u", "nope", {}), ("j", "read", {INVALID_JSON_KEY: '{"pa'})]),
            Reply(text="sorry"),
        )
    )
    engine = rig.engine()
    outcome = await engine.run(ask("go"))
    assert outcome.stop_reason == "end_turn"
    results = results_of(engine.history[2])
    assert "unknown tool 'nope'" in results["u"].content
    assert "not valid JSON" in results["j"].content
    assert rig.tools.started == []


async def test_tool_failure_is_reported_to_the_model() -> None:
    rig = Rig(
        ScriptedProvider.of(Reply(tools=[("b", "bash", {"command": "x"})]), Reply(text="hm")),
        tools=FakeToolBox(fail=frozenset({"bash"})),
    )
    engine = rig.engine()
    outcome = await engine.run(ask("go"))
    assert outcome.stop_reason == "end_turn"
    assert results_of(engine.history[2])["b"] == ToolResultPart("b", "bash failed", True)
    assert rig.statuses("b") == ["in_progress", "failed"]


async def _cancel_when(engine: Engine, prompt: Prompt, ready: asyncio.Event) -> object:
    task = asyncio.create_task(engine.run(prompt))
    await asyncio.wait_for(ready.wait(), 5)
    task.cancel()
    return await task


async def test_cancel_during_streaming_keeps_history_valid() -> None:
    hold = asyncio.Event()
    rig = Rig(ScriptedProvider.of(Reply(text="partial words", hold=hold), Reply(text="fresh")))
    engine = rig.engine()
    outcome = await _cancel_when(engine, ask("one"), rig.provider.started)

    assert outcome.stop_reason == "cancelled"  # type: ignore[attr-defined]
    assert [m.role for m in engine.history] == ["user"]
    again = await engine.run(ask("two"))
    assert again.stop_reason == "end_turn"
    assert [m.role for m in engine.history] == ["user", "user", "assistant"]


async def test_cancel_during_a_tool_pairs_every_announced_call() -> None:
    calls = [("r1", "read", {"path": "/a"}), ("b1", "bash", {"command": "sleep 99"})]
    rig = Rig(ScriptedProvider.of(Reply(tools=calls)), tools=FakeToolBox(hold=asyncio.Event()))
    engine = rig.engine()
    outcome = await _cancel_when(engine, ask("go"), rig.tools.running)

    assert outcome.stop_reason == "cancelled"  # type: ignore[attr-defined]
    last = engine.history[-1]
    assert [r.tool_use_id for r in last.tool_results] == ["r1", "b1"]
    assert all(r.is_error for r in last.tool_results)
    assert rig.statuses("r1")[-1] == "failed"
    assert rig.statuses("b1")[-1] == "failed"


async def test_cancel_during_a_pending_approval() -> None:
    rig = Rig(
        ScriptedProvider.of(Reply(tools=[("w", "write", {"path": "/a"})])),
        policy=ScriptedPolicy({"write": Verdict.ASK}),
    )
    engine = rig.engine()
    outcome = await _cancel_when(engine, ask("go"), rig.approver.asked)
    assert outcome.stop_reason == "cancelled"  # type: ignore[attr-defined]
    assert rig.tools.started == []
    assert results_of(engine.history[-1])["w"].content == "Cancelled by the user."


async def test_an_approval_answered_cancelled_cancels_the_turn() -> None:
    rig = Rig(
        ScriptedProvider.of(Reply(tools=[("w", "write", {"path": "/a"})])),
        policy=ScriptedPolicy({"write": Verdict.ASK}),
        approver=ScriptedApprover.of(ApprovalDecision.CANCELLED),
    )
    outcome = await rig.engine().run(ask("go"))
    assert outcome.stop_reason == "cancelled"
    assert rig.tools.started == []


async def test_retryable_errors_back_off_through_the_clock() -> None:
    rig = Rig(
        ScriptedProvider.of(
            RateLimited("slow down", status=429, retry_after=3.0),
            Overloaded("busy", status=529),
            Overloaded("busy", status=529),
            Reply(text="finally"),
        )
    )
    outcome = await rig.engine().run(ask("hi"))
    assert outcome.stop_reason == "end_turn"
    assert rig.clock.sleeps == [3.0, 1.0, 2.0]


async def test_a_stream_that_showed_content_is_not_replayed_silently() -> None:
    rig = Rig(ScriptedProvider.of(Reply(text="Part", error=Overloaded("x")), Reply(text="Whole")))
    engine = rig.engine()
    await engine.run(ask("hi"))
    shown = "".join(e.text for e in rig.emitter.of(AgentMessageChunk))
    assert shown.startswith("Part") and "interrupted" in shown and shown.endswith("Whole")
    assert engine.history[-1].parts == (TextPart("Whole"),)


async def test_retries_are_bounded() -> None:
    rig = Rig(ScriptedProvider.of(*[Overloaded("busy") for _ in range(5)]))
    outcome = await rig.engine().run(ask("hi"))
    assert outcome.stop_reason == "end_turn"
    assert outcome.error is not None and "busy" in outcome.error
    assert len(rig.clock.sleeps) == 4


@pytest.mark.parametrize(
    ("error", "reason"),
    [(AuthError("bad key", status=401), "end_turn"), (ContextOverflow("too long"), "max_tokens")],
)
async def test_fatal_errors_end_the_turn_visibly(error: Exception, reason: str) -> None:
    rig = Rig(ScriptedProvider.of(error))  # type: ignore[arg-type]
    outcome = await rig.engine().run(ask("hi"))
    assert outcome.stop_reason == reason
    assert rig.clock.sleeps == []
    assert str(error) in rig.emitter.of(AgentMessageChunk)[-1].text


@pytest.mark.parametrize(("stop", "reason"), [("max_tokens", "max_tokens"), ("refusal", "refusal")])
async def test_model_stop_reasons_map_to_acp(stop: str, reason: str) -> None:
    rig = Rig(ScriptedProvider.of(Reply(text="x", stop=stop)))  # type: ignore[arg-type]
    assert (await rig.engine().run(ask("hi"))).stop_reason == reason


async def test_token_ceiling_stops_after_the_step_that_crossed_it() -> None:
    big = Usage(input_tokens=600, output_tokens=500)
    rig = Rig(
        ScriptedProvider.of(Reply(tools=[("r", "read", {"path": "/a"})], usage=big)),
        limits=Limits(max_turn_tokens=1000),
    )
    outcome = await rig.engine().run(ask("hi"))
    assert outcome.stop_reason == "max_tokens"
    assert outcome.context_tokens == 1100


async def test_embedded_resources_reach_the_model_as_text() -> None:
    rig = Rig(ScriptedProvider.of(Reply(text="ok")))
    prompt = Prompt((TextBlock("explain"), EmbeddedResourceBlock("file:///w/a.py", "x = 1")))
    await rig.engine().run(prompt)
    first = rig.provider.requests[0].messages[0]
    assert first.parts[0] == TextPart("explain")
    assert "x = 1" in first.parts[1].text  # type: ignore[union-attr]


async def test_history_carries_tool_uses_for_the_next_turn() -> None:
    rig = Rig(
        ScriptedProvider.of(
            Reply(tools=[("r", "read", {"path": "/a"})]), Reply(text="a"), Reply(text="b")
        )
    )
    engine = rig.engine()
    await engine.run(ask("one"))
    await engine.run(ask("two"))
    sent = rig.provider.requests[-1].messages
    assert sent[1].parts == (ToolUsePart("r", "read", {"path": "/a"}),)
    assert [m.role for m in sent] == ["user", "assistant", "user", "assistant", "user"]


async def test_a_turn_stopped_by_a_limit_does_not_stop_the_next_one() -> None:
    same = ("bash", {"command": "false"})
    script = [Reply(tools=[(f"c{i}", *same)]) for i in range(3)]
    rig = Rig(ScriptedProvider.of(*script, Reply(tools=[("d", *same)]), Reply(text="fine")))
    engine = rig.engine()
    assert (await engine.run(ask("go"))).stop_reason == "max_turn_requests"
    assert (await engine.run(ask("again"))).stop_reason == "end_turn"
    assert rig.tools.started[-1] == "d"


async def test_duplicate_and_missing_tool_ids_are_made_distinct_for_screen_and_model() -> None:
    """Two calls sharing an id (and one with none, and an id reused at the next step)
    are shown as separate calls, each gets its own result, and the history sent
    back pairs each rewritten id with its result."""
    rig = Rig(
        ScriptedProvider.of(
            Reply(
                tools=[
                    ("dup", "read", {"path": "/w/a"}),
                    ("dup", "read", {"path": "/w/b"}),
                    ("", "read", {"path": "/w/c"}),
                ]
            ),
            Reply(tools=[("dup", "read", {"path": "/w/d"})]),
            Reply(text="done"),
        )
    )
    engine = rig.engine()
    outcome = await engine.run(ask("read"))

    assert outcome.stop_reason == "end_turn"
    started = [(e.tool_call_id, e.raw_input) for e in rig.emitter.of(ToolCallStarted)]
    ids = [i for i, _ in started]
    assert ids[:2] == ["dup", "dup_2"] and ids[3] == "dup_3"
    assert len(set(ids)) == 4 and all(ids)
    assert [r["path"] for _, r in started] == ["/w/a", "/w/b", "/w/c", "/w/d"]
    for call_id in ids:
        assert rig.statuses(call_id) == ["in_progress", "completed"]
    sent = rig.provider.requests[2].messages
    uses = [u.id for m in sent for u in m.tool_uses]
    results = [r.tool_use_id for m in sent for r in m.tool_results]
    assert uses == results == ids


async def test_after_a_cut_off_reply_retries_show_only_when_complete() -> None:
    """The first attempt's partial text stays; a retry cut off too shows nothing; the
    complete reply is shown once."""
    rig = Rig(
        ScriptedProvider.of(
            Reply(text="Part one", error=Overloaded("x")),
            Reply(text="Again cut", error=Overloaded("x")),
            Reply(text="Whole answer"),
        )
    )
    engine = rig.engine()
    await engine.run(ask("hi"))
    shown = "".join(e.text for e in rig.emitter.of(AgentMessageChunk))
    assert shown.startswith("Part one")
    assert "Again" not in shown
    assert shown.count("interrupted") == 2 and "retry 2 of 4" in shown
    assert shown.endswith("Whole answer")


@dataclass
class FloodingTools(FakeToolBox):
    """A tool (an MCP server's, say) that shows 5 MB live and returns 5 MB."""

    async def run(self, call: ToolCall, progress: ToolProgress) -> ToolResult:
        flood = "x" * 5_000_000
        await progress((TextBlock(flood),))
        return ToolResult(flood, content=(TextBlock(flood),))


async def test_whatever_a_tool_returns_what_is_shown_and_kept_is_bounded() -> None:
    limits = Limits(max_shown_chars=1_000, max_result_bytes=2_000)
    rig = Rig(
        ScriptedProvider.of(Reply(tools=[("t1", "bash", {"command": "x"})]), Reply(text="ok")),
        tools=FloodingTools(),
        limits=limits,
    )
    await rig.engine().run(ask("go"))

    texts = [c.text for u in rig.updates("t1") for c in u.content or () if isinstance(c, TextBlock)]
    assert len(texts) == 2
    assert all(len(t) < 2 * limits.max_shown_chars + 100 for t in texts)
    assert all("characters cut from the middle" in t for t in texts)
    result = rig.provider.requests[1].messages[-1].tool_results[0]
    assert len(result.content.encode()) <= limits.max_result_bytes
