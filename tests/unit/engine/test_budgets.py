"""Budgets that count everything a turn spends: an explore child's turn, compaction's
summaries, calls whose arguments are not JSON, and a turn cut short by a crash (the
guard's snapshot). The engine driven by a scripted model and a fake clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from loopd.engine.delegate import ChildRuntime
from loopd.engine.guard import LoopGuardSnapshot
from loopd.engine.limits import Limits
from loopd.engine.loop import Engine, EngineConfig
from loopd.engine.ports import Spending
from loopd.protocol.errors import ContextOverflow
from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.model import INVALID_JSON_KEY, Usage
from loopd.testing.fakes import Reply, ScriptedPolicy, ScriptedProvider
from loopd.tools.env import ToolEnv
from loopd.tools.explore import Explore
from loopd.tools.registry import ToolRegistry, builtin_tools
from tests.unit.engine.test_loop import Rig

PRICED = "claude-sonnet-4-5"  # $3 per million input tokens
DEAR = Usage(input_tokens=300_000, output_tokens=0)  # $0.90 a request


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


def explorer(tmp_path: Path, child: ScriptedProvider) -> ToolRegistry:
    env = ToolEnv(roots=(str(tmp_path),))
    tool = Explore(ChildRuntime(child, PRICED), builtin_tools(), ScriptedPolicy())
    return ToolRegistry(env, (*builtin_tools(), tool))


EXPLORE = Reply(tools=[("e1", "explore", {"question": "where is main?"})])


def globbing(steps: int, usage: Usage) -> ScriptedProvider:
    """A child that would look `steps` times, each request costing `usage`."""
    looks = [
        Reply(tools=[(f"c{i}", "glob", {"pattern": f"*.{i}"})], usage=usage) for i in range(steps)
    ]
    return ScriptedProvider.of(*looks, Reply(text="in a.py", usage=usage))


async def test_the_explore_childs_tokens_count_against_the_turns_ceiling(tmp_path: Path) -> None:
    child = ScriptedProvider.of(Reply(text="in a.py", usage=Usage(5_000, 1_000)))
    rig = Rig(ScriptedProvider.of(EXPLORE, Reply(text="never asked")), explorer(tmp_path, child))
    rig.limits = Limits(max_turn_tokens=2_000)
    outcome = await rig.engine().run(ask("find main"))

    assert outcome.stop_reason == "max_tokens"
    assert outcome.usage == Usage(10, 5) + Usage(5_000, 1_000)
    assert len(rig.provider.requests) == 1


async def test_the_explore_childs_cost_is_the_turns_and_the_sessions(tmp_path: Path) -> None:
    """Charged to the turn and the session, and bounded by what the turn had left:
    the child stops once past the $1, not after its ten requests ($9)."""
    child = globbing(9, DEAR)
    rig = Rig(
        ScriptedProvider.of(EXPLORE, Reply(text="never asked")),
        explorer(tmp_path, child),
        limits=Limits(max_turn_cost_usd=1.0),
        model=PRICED,
    )
    engine = rig.engine()
    outcome = await engine.run(ask("find main"))

    assert outcome.stop_reason == "max_turn_requests"
    assert "Stopped by the loop guard: more than $1 spent" in rig.emitter.text
    assert len(rig.provider.requests) == 1  # no further request once the budget ran out
    assert engine.keeper.cost == pytest.approx(1.8 + 10 * 3e-6 + 5 * 15e-6)  # the parent step too
    assert len(child.requests) == 2  # $0.90, then $1.80: past the $1 the turn had


async def test_the_explore_child_runs_within_the_tokens_the_turn_has_left(
    tmp_path: Path,
) -> None:
    child = globbing(9, Usage(1_500, 100))
    rig = Rig(ScriptedProvider.of(EXPLORE, Reply(text="never asked")), explorer(tmp_path, child))
    rig.limits = Limits(max_turn_tokens=2_000)
    outcome = await rig.engine().run(ask("find main"))

    assert len(child.requests) == 2  # 1,600 of the 1,985 left, then the second passes it
    assert outcome.stop_reason == "max_tokens"
    assert len(rig.provider.requests) == 1


async def test_no_explorer_starts_once_the_turns_budget_is_used_up(tmp_path: Path) -> None:
    child = globbing(0, Usage(10, 5))
    both = Reply(tools=[("g1", "glob", {"pattern": "*"}), ("e1", "explore", {"question": "?"})])
    rig = Rig(ScriptedProvider.of(both, Reply(text="done")), explorer(tmp_path, child))
    rig.limits = Limits(max_turn_tokens=10)  # the step's own reply used it (15 tokens)
    engine = rig.engine()
    outcome = await engine.run(ask("look"))

    assert child.requests == []
    explored = [p for m in engine.history for p in m.tool_results if p.tool_use_id == "e1"]
    assert "No explorer was started" in explored[0].content
    assert outcome.stop_reason == "max_tokens"


@dataclass
class SpendingBook:
    """The `ContextJournal` port, recording what the engine keeps of its spending."""

    kept: list[Spending] = field(default_factory=list)

    def compacted(self, start: int, summary: str) -> None:
        return None

    def spent(self, spending: Spending) -> None:
        self.kept.append(spending)


async def test_compactions_summaries_are_paid_for_by_the_turn() -> None:
    rig = Rig(
        ScriptedProvider.of(
            Reply(text="b" * 40_000),
            Reply(text="c" * 40_000),
            ContextOverflow("prompt is too long: 25000 tokens > 20000 maximum"),
            Reply(text="first half", usage=DEAR),  # the summary, in two pieces
            Reply(text="the summary", usage=DEAR),
            Reply(tools=[("r1", "read", {"path": "/w/a"})]),
        ),
        model=PRICED,
    )
    engine = rig.engine()
    for prompt in ("one", "two"):
        await engine.run(ask(prompt))
    before = engine.keeper.cost
    engine.config = EngineConfig(model=PRICED, limits=Limits(max_turn_cost_usd=1.0))
    outcome = await engine.run(ask("three"))

    assert outcome.usage.input_tokens >= 600_000  # both summaries are the turn's
    assert engine.keeper.cost - before >= 1.8
    assert rig.emitter.text.count("Loop guard: $0.9 of $1 spent in this turn.") == 1
    assert outcome.stop_reason == "max_turn_requests"
    results = [p for m in engine.history for p in m.tool_results]
    assert "Stopped by the loop guard: more than $1 spent" in results[-1].content


async def test_a_compact_command_is_paid_for_by_the_session() -> None:
    rig = Rig(
        ScriptedProvider.of(Reply(text="an answer"), Reply(text="the summary", usage=DEAR)),
        model=PRICED,
    )
    engine = rig.engine()
    book = SpendingBook()
    engine.ports.context = book
    await engine.run(ask("one"))
    before = engine.keeper.cost
    await engine.compact()
    assert engine.keeper.cost - before == pytest.approx(0.9)
    assert book.kept[-1].cost == engine.keeper.cost  # kept: a reload still has it


def broken(call_id: str, raw: str = '{"path": "/w/a') -> Reply:
    return Reply(tools=[(call_id, "read", {INVALID_JSON_KEY: raw})], stop="tool_use")


async def test_broken_calls_meet_the_repeat_cap_with_no_iteration_cap() -> None:
    rig = Rig(ScriptedProvider.of(*(broken(f"c{i}") for i in range(6))))
    rig.limits = Limits(max_iterations=0)
    outcome = await rig.engine().run(ask("read it"))

    assert outcome.stop_reason == "max_turn_requests"
    assert len(rig.provider.requests) == 3
    assert "the same read call 3 times in a row" in rig.emitter.text


async def test_broken_calls_count_against_the_call_budget() -> None:
    replies = [broken(f"c{i}", f'{{"path": "/w/{i}') for i in range(8)]
    rig = Rig(ScriptedProvider.of(*replies))
    rig.limits = Limits(max_iterations=0, max_tool_calls=4)
    outcome = await rig.engine().run(ask("read them"))

    assert outcome.stop_reason == "max_turn_requests"
    assert len(rig.provider.requests) == 5
    assert "Stopped by the loop guard: more than 4 actions" in rig.emitter.text


async def test_every_step_keeps_the_guard_and_the_end_of_the_turn_lets_it_go() -> None:
    steps = [Reply(tools=[(f"c{i}", "read", {"path": f"/w/{i}"})]) for i in range(2)]
    rig = Rig(ScriptedProvider.of(*steps, Reply(text="read")))
    engine = rig.engine()
    book = SpendingBook()
    engine.ports.context = book
    await engine.run(ask("read"))

    guards = [s.guard for s in book.kept]
    assert [g.action_count if g else None for g in guards] == [1, 2, None]


async def test_a_turn_cut_short_goes_on_under_its_guard() -> None:
    cut = LoopGuardSnapshot(actions=(), action_count=4, warned_actions=True)
    steps = [Reply(tools=[(f"c{i}", "read", {"path": f"/w/{i}"})]) for i in range(3)]
    rig = Rig(ScriptedProvider.of(*steps), limits=Limits(max_tool_calls=5))
    built = rig.engine()  # as a reloaded session builds it:
    engine = Engine("s1", built.config, built.ports, spending=Spending(2.5, cut))
    assert engine.spending == Spending(2.5, cut)
    outcome = await engine.run(ask("go on"))

    assert outcome.stop_reason == "max_turn_requests"
    assert "Stopped by the loop guard: more than 5 actions" in rig.emitter.text
    assert "actions used" not in rig.emitter.text  # warned before the crash: not again
    assert len(rig.provider.requests) == 2
    assert engine.keeper.cost == 2.5 and engine.spending.guard is None
