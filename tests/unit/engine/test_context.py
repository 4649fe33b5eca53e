"""The engine inside its window, against a scripted model: the one budget notice, a
compaction that cannot make room ending the turn with its reason, and the two
regressions (a command beside a write, a cancel during the usage update)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

import pytest

from loopd.context.compaction import CompactionPolicy
from loopd.engine.limits import Limits
from loopd.engine.loop import Engine
from loopd.protocol.errors import ContextOverflow, Overloaded
from loopd.protocol.events import AgentMessageChunk, Prompt, SessionEvent, TextBlock, UsageUpdated
from loopd.protocol.messages import ToolResultPart
from loopd.protocol.model import Usage
from loopd.store.reconcile import reconcile_messages
from loopd.testing.fakes import RecordingEmitter, Reply, ScriptedProvider
from tests.unit.engine.test_loop import Rig


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


TINY = Usage(input_tokens=1, output_tokens=1)  # calibrates the estimate to its floor


async def test_the_budget_notice_is_given_exactly_once() -> None:
    quiet = CompactionPolicy(automatic=False, notice_at=3_000, compact_at=10_000)
    replies = [Reply(text="a" * 4_000, usage=TINY) for _ in range(8)]
    rig = Rig(ScriptedProvider.of(*replies), compaction=quiet)
    rig.windows.learn("m", 10_000)
    engine = rig.engine()
    for n in range(8):
        assert (await engine.run(ask(f"turn {n}"))).stop_reason == "end_turn"

    shown = [e.text for e in rig.emitter.of(AgentMessageChunk) if "Context budget" in e.text]
    assert len(shown) == 1
    told = [m for m in rig.provider.requests[-1].messages if "Context budget" in m.text]
    assert len(told) == 1 and told[0].role == "user"
    sizes = {e.size for e in rig.emitter.of(UsageUpdated)}
    assert sizes == {10_000}


async def test_an_overflow_that_compaction_cannot_fix_ends_the_turn_with_the_reason() -> None:
    overflow = ContextOverflow("prompt is too long: 30000 tokens > 20000 maximum")
    rig = Rig(ScriptedProvider.of(overflow))
    engine = rig.engine()
    outcome = await engine.run(ask("x" * 100_000))

    assert outcome.stop_reason == "max_tokens"
    assert outcome.error is not None
    assert "compacting it could not make room" in outcome.error
    assert "the newest step alone is about" in outcome.error
    assert "prompt is too long" in rig.emitter.text
    assert len(rig.provider.requests) == 1, "no summary was asked for a tail that cannot fit"
    assert rig.windows.learned("m") == 20_000


async def test_an_overflow_compacts_and_retries_the_same_step() -> None:
    rig = Rig(
        ScriptedProvider.of(
            Reply(text="b" * 40_000),
            Reply(text="c" * 40_000),
            ContextOverflow("prompt is too long: 25000 tokens > 20000 maximum"),
            Overloaded("busy"),  # a summary request is retried like any other
            Reply(text="first half"),
            Reply(text="the summary"),
            Reply(text="continued"),
        )
    )
    engine = rig.engine()
    for prompt in ("one", "two", "three"):
        assert (await engine.run(ask(prompt))).stop_reason == "end_turn"

    first, second = rig.provider.requests[4:6]  # the summary, made in two pieces
    assert rig.provider.requests[3] == first and len(rig.clock.sleeps) == 1
    assert "User: one" in first.messages[0].text and "ccc" not in first.messages[0].text
    assert "The summary so far:\nfirst half" in second.messages[0].text
    assert "Assistant: ccc" in second.messages[0].text
    retry = rig.provider.requests[-1]
    assert "the summary" in retry.messages[0].text
    assert retry.messages[-1].text == "three"
    assert [m.text for m in engine.history][-2:] == ["three", "continued"]
    assert len(engine.history) == 6, "the history stays whole"
    assert "Context compacted" in rig.emitter.text


async def test_a_write_and_a_command_in_one_step_run_one_after_the_other() -> None:
    calls = [("w", "write", {"path": "/w/a"}), ("b", "bash", {"command": "cat /w/a"})]
    rig = Rig(ScriptedProvider.of(Reply(tools=calls), Reply(text="ok")))
    await rig.engine().run(ask("write then run"))
    assert rig.tools.started == ["w", "b"]
    assert rig.tools.peak == 1


@dataclass(slots=True)
class StallOnUsage(RecordingEmitter):
    """Holds the usage update open, as a slow client connection would."""

    reached: asyncio.Event = field(default_factory=asyncio.Event)

    async def emit(self, event: SessionEvent) -> None:
        await RecordingEmitter.emit(self, event)
        if isinstance(event, UsageUpdated):
            self.reached.set()
            await asyncio.Event().wait()


async def test_a_cancel_during_the_usage_update_pairs_every_announced_call() -> None:
    calls = [("r1", "read", {"path": "/w/a"}), ("r2", "read", {"path": "/w/b"})]
    rig = Rig(ScriptedProvider.of(Reply(tools=calls)), emitter=StallOnUsage())
    engine = rig.engine()
    turn = asyncio.create_task(engine.run(ask("read both")))
    async with asyncio.timeout(5):
        await rig.emitter.reached.wait()  # type: ignore[attr-defined]
    turn.cancel()
    outcome = await turn

    assert outcome.stop_reason == "cancelled"
    calls_msg, results_msg = engine.history[-2:]
    assert [u.id for u in calls_msg.tool_uses] == ["r1", "r2"]
    assert results_msg.tool_results == (
        ToolResultPart("r1", "Cancelled by the user.", True),
        ToolResultPart("r2", "Cancelled by the user.", True),
    )
    assert rig.tools.started == []


async def test_the_configured_repeat_cap_and_the_budget_warning_reach_the_model() -> None:
    same = [Reply(tools=[(f"c{i}", "read", {"path": "/w/a"})]) for i in range(4)]
    rig = Rig(ScriptedProvider.of(*same, Reply(text="done")), limits=Limits(max_identical_calls=5))
    engine = rig.engine()
    assert (await engine.run(ask("read a lot"))).stop_reason == "end_turn"
    assert rig.tools.started == ["c0", "c1", "c2", "c3"]

    many = [Reply(tools=[(f"d{i}", "read", {"path": f"/w/{i}"})]) for i in range(6)]
    rig = Rig(ScriptedProvider.of(*many), limits=Limits(max_tool_calls=5))
    engine = rig.engine()
    outcome = await engine.run(ask("read everything"))
    assert outcome.stop_reason == "max_turn_requests"
    results = [p for m in engine.history for p in m.tool_results]
    warned = [r.tool_use_id for r in results if "[Loop guard: 4 of 5 actions used" in r.content]
    assert warned == ["d3"]
    assert rig.emitter.text.count("[Loop guard: 4 of 5 actions used in this turn.]") == 1
    assert "Stopped by the loop guard: more than 5 actions" in results[-1].content
    assert "Stopped by the loop guard" in rig.emitter.text


async def test_limits_set_to_zero_are_off() -> None:
    same = [Reply(tools=[(f"c{i}", "read", {"path": "/w/a"})]) for i in range(30)]
    off = Limits(max_iterations=0, max_tool_calls=0, max_identical_calls=0)
    rig = Rig(ScriptedProvider.of(*same, Reply(text="done")), limits=off)
    outcome = await rig.engine().run(ask("read it thirty times"))
    assert outcome.stop_reason == "end_turn"
    assert len(rig.tools.started) == 30


async def test_a_configured_window_is_the_size_reported() -> None:
    rig = Rig(ScriptedProvider.of(Reply(text="ok")))
    engine = rig.engine()
    engine.reconfigure(replace(engine.config, windows={"m": 12_000}), engine.ports)
    await engine.run(ask("hi"))
    assert [e.size for e in rig.emitter.of(UsageUpdated)] == [12_000]


async def test_the_cost_budget_warns_once_then_stops_the_turn() -> None:
    dear = Usage(input_tokens=300_000, output_tokens=0)  # $0.90 a request at $3/M
    steps = [Reply(tools=[(f"c{i}", "read", {"path": f"/w/{i}"})], usage=dear) for i in range(3)]
    rig = Rig(
        ScriptedProvider.of(*steps),
        limits=Limits(max_turn_cost_usd=1.0),
        model="claude-sonnet-4-5",
    )
    engine = rig.engine()
    outcome = await engine.run(ask("spend"))

    assert outcome.stop_reason == "max_turn_requests"
    assert rig.emitter.text.count("Loop guard: $0.9 of $1 spent in this turn.") == 1
    assert "Loop guard: $0.9 of $1 spent" in rig.provider.requests[1].messages[-1].text
    results = [p for m in engine.history for p in m.tool_results]
    assert [r.is_error for r in results] == [False, True]
    assert "Stopped by the loop guard: more than $1 spent" in results[-1].content
    assert len(rig.provider.requests) == 2


async def test_the_output_reserved_fits_the_window_of_each_model() -> None:
    """A 10k window gets a quarter of it for the answer, not a fixed 8192 that left a
    2k prompt no room; a large window gets the configured maximum."""
    rig = Rig(ScriptedProvider.of(Reply(text="small"), Reply(text="large")))
    rig.windows.learn("m", 10_000)
    engine = rig.engine()
    await engine.run(ask("x" * 8_000))  # some 2k tokens
    rig.windows.learn("m", 1_000_000)
    await engine.run(ask("again"))

    small, large = (r.max_tokens for r in rig.provider.requests)
    assert small == 2_500
    assert large == 8_192


LONG_STEP = Reply(text="a" * 40_000, tools=[("t1", "bash", {"command": "ls"})], usage=TINY)
LONG_ANSWER = Reply(text="a" * 40_000, usage=TINY)


@pytest.mark.parametrize(
    "turn",
    [(LONG_STEP, Reply(text="done", usage=TINY)), (LONG_ANSWER,)],
    ids=["with-tool-results", "after-the-last-reply"],
)
async def test_the_budget_notice_is_journaled_and_kept_after_a_reload(
    turn: tuple[Reply, ...],
) -> None:
    """The notice, whether it rides with a step's results or was given as the
    turn's last reply came (for the next prompt), is in the journal: an engine
    rebuilt from it (a reloaded session) still shows the model the notice, once,
    and does not give it again."""
    quiet = CompactionPolicy(automatic=False, notice_at=3_000, compact_at=10_000)
    replies = (*turn, Reply(text="again", usage=TINY))
    rig = Rig(ScriptedProvider.of(*replies), compaction=quiet)
    rig.windows.learn("m", 10_000)
    engine = rig.engine()
    await engine.run(ask("go"))
    assert sum("Context budget" in m.text for m in rig.journal.messages) == 1

    history = reconcile_messages(rig.journal.messages)
    reloaded = Engine("s1", engine.config, engine.ports, history)
    await reloaded.run(ask("more"))
    sent = rig.provider.requests[-1].messages
    assert sum("Context budget" in m.text for m in sent) == 1
    shown = [e for e in rig.emitter.of(AgentMessageChunk) if "Context budget" in e.text]
    assert len(shown) == 1
