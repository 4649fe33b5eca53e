"""The loop guard: repetition, cycles, budgets, the one-shot warning, persistence."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopd.engine.guard import (
    LoopAction,
    LoopGuard,
    LoopGuardOptions,
    LoopGuardSnapshot,
    LoopVerdict,
)

Event = LoopAction | float  # a float is a cost with no action (observe_cost)


def act(name: str, cost: float | None = None) -> LoopAction:
    """An action named by its arguments; every test action uses the same tool."""
    return LoopAction(tool="bash", args_key=name, cost_usd=cost)


def feed(guard: LoopGuard, events: list[Event]) -> list[LoopVerdict]:
    return [
        guard.observe(e) if isinstance(e, LoopAction) else guard.observe_cost(e) for e in events
    ]


def actions(names: str) -> list[Event]:
    return [act(n) for n in names]


@dataclass(frozen=True)
class Case:
    events: list[Event]
    statuses: str  # one letter per event: o(k), w(arn), s(top)
    options: LoopGuardOptions = field(default_factory=LoopGuardOptions)


CASES = {
    "distinct actions are fine": Case(actions("abcdefgh"), "oooooooo"),
    "the repeat cap stops the third identical action": Case(actions("aaa"), "oos"),
    "a broken run of repeats does not stop": Case(actions("aabaab"), "oooooo"),
    "the same args to another tool are not a repeat": Case(
        [act("a"), LoopAction("read", "a"), act("a")], "ooo"
    ),
    "a higher repeat cap waits longer": Case(
        actions("aaaaa"), "oooos", LoopGuardOptions(repeat_cap=5, max_cycle_period=1)
    ),
    "one repeated action is never reported as a cycle": Case(
        actions("aaaaaa"), "oooooo", LoopGuardOptions(repeat_cap=7)
    ),
    "a cycle of period 2 stops at its third lap": Case(actions("abababab"), "ooooosss"),
    "a cycle of period 3 stops at its third lap": Case(actions("xabcabcabc"), "ooooooooos"),
    "a cycle of period 4 stops at its third lap": Case(actions("abcd" * 3), "o" * 11 + "s"),
    "a cycle longer than max_cycle_period is not inspected": Case(actions("abcde" * 3), "o" * 15),
    "two laps are not a cycle": Case(actions("ababcdcd"), "oooooooo"),
    "cycle_min_occurrences sets the laps needed": Case(
        actions("abab"), "ooos", LoopGuardOptions(cycle_min_occurrences=2)
    ),
    "a stopped guard stays stopped": Case([*actions("aaabc"), 0.0], "oossss"),
    "the action budget warns once at its fraction then stops when exceeded": Case(
        actions("abcdefg"), "oooowos", LoopGuardOptions(max_actions=6, warn_fraction=0.7)
    ),
    "reaching the action budget exactly is allowed": Case(
        actions("abcde"), "ooowo", LoopGuardOptions(max_actions=5)
    ),
    "the cost budget warns once then stops when exceeded": Case(
        [act(n, cost=0.25) for n in "abcdef"],
        "owooss",
        LoopGuardOptions(max_cost_usd=1.0, warn_fraction=0.5),
    ),
    "each budget warns on its own": Case(
        [act("a", 0.5), act("b"), act("c", 0.4), act("d")],
        "wwoo",
        LoopGuardOptions(max_actions=4, max_cost_usd=1.0, warn_fraction=0.5),
    ),
    "costs without actions are charged": Case(
        [0.5, 0.4, 0.2], "ows", LoopGuardOptions(max_cost_usd=1.0)
    ),
    "costs without actions do not count as actions": Case(
        [act("a"), 1.0, 1.0, 1.0, act("b")], "oooow", LoopGuardOptions(max_actions=2)
    ),
    "costs without actions do not break a run of repeats": Case(
        [act("a"), 0.0, act("a"), 0.0, act("a")], "oooos"
    ),
    "an action without a cost never exceeds even a zero budget": Case(
        actions("abc"), "woo", LoopGuardOptions(max_cost_usd=0.0)
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_guard(case: Case) -> None:
    verdicts = feed(LoopGuard(case.options), case.events)

    assert "".join(v.status[0] for v in verdicts) == case.statuses
    assert all((v.reason is None) == (v.status == "ok") for v in verdicts)


def test_a_warning_says_which_budget_and_how_much() -> None:
    guard = LoopGuard(LoopGuardOptions(max_actions=10, max_cost_usd=2.0, warn_fraction=0.1))

    verdict = guard.observe(act("a", cost=0.5))

    assert verdict == LoopVerdict("warn", "1 of 10 actions used; $0.5 of $2 spent")


def test_later_verdicts_repeat_the_reason_the_guard_stopped_for() -> None:
    guard = LoopGuard()
    stop = feed(guard, actions("aaa"))[-1]

    assert stop == LoopVerdict("stop", "the same bash call 3 times in a row")
    assert guard.observe(act("b")) == stop
    assert guard.observe_cost(1.0) == stop


@pytest.mark.parametrize("cost", [-0.01, float("nan"), float("inf")])
def test_a_cost_that_is_not_an_amount_is_refused(cost: float) -> None:
    guard = LoopGuard()

    with pytest.raises(ValueError, match="finite, non-negative"):
        guard.observe(act("a", cost=cost))
    with pytest.raises(ValueError, match="finite, non-negative"):
        guard.observe_cost(cost)


@pytest.mark.parametrize(
    "options",
    [
        {"repeat_cap": 1},
        {"cycle_min_occurrences": 1},
        {"warn_fraction": 0.0},
        {"warn_fraction": 1.5},
    ],
)
def test_options_that_cannot_work_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        LoopGuardOptions(**options)


# -- snapshot and restore ----------------------------------------------------------------


def test_the_snapshot_keeps_only_the_history_the_checks_can_use() -> None:
    options = LoopGuardOptions(repeat_cap=3, max_cycle_period=2, cycle_min_occurrences=3)
    guard = LoopGuard(options)
    feed(guard, actions("abcdefghij"))

    snapshot = guard.snapshot()

    assert len(snapshot.actions) == 6
    assert snapshot.action_count == 10


def test_a_restored_guard_continues_the_run() -> None:
    first = LoopGuard()
    feed(first, actions("aa"))
    second = LoopGuard()

    second.restore(first.snapshot())

    assert second.observe(act("a")).status == "stop"


def test_restore_ignores_nothing_and_unknown_versions() -> None:
    guard = LoopGuard()
    feed(guard, actions("aa"))

    guard.restore(None)
    guard.restore(LoopGuardSnapshot(version=99))

    assert guard.observe(act("a")).status == "stop"


def test_from_json_returns_none_for_an_unknown_version() -> None:
    assert LoopGuardSnapshot.from_json({"version": 2, "whatever": True}) is None
    assert LoopGuardSnapshot.from_json({}) is None


@pytest.mark.parametrize(
    "corruption",
    [
        {"actions": "ab"},
        {"actions": [1, 2]},
        {"actionCount": "3"},
        {"actionCount": True},
        {"cumulativeCostUsd": "0.5"},
        {"stopped": 1},
        {"stopReason": 3},
    ],
)
def test_from_json_refuses_malformed_data(corruption: dict[str, object]) -> None:
    data = LoopGuard().snapshot().to_json() | corruption

    with pytest.raises(ValueError, match=r"wrong type|not a boolean"):
        LoopGuardSnapshot.from_json(data)


def test_from_json_refuses_missing_fields() -> None:
    data = LoopGuard().snapshot().to_json()
    del data["warnedCost"]

    with pytest.raises(ValueError, match="lacks 'warnedCost'"):
        LoopGuardSnapshot.from_json(data)


def test_a_stopped_snapshot_without_a_reason_still_stops() -> None:
    data = LoopGuard().snapshot().to_json() | {"stopped": True}
    del data["stopReason"]
    guard = LoopGuard()

    guard.restore(LoopGuardSnapshot.from_json(data))

    assert guard.observe(act("a")) == LoopVerdict("stop", "the loop guard stopped this run")


_OPTIONS = st.builds(
    LoopGuardOptions,
    repeat_cap=st.integers(2, 5),
    max_cycle_period=st.integers(1, 5),
    cycle_min_occurrences=st.integers(2, 4),
    max_cost_usd=st.none() | st.floats(0, 5),
    max_actions=st.none() | st.integers(0, 30),
    warn_fraction=st.floats(0.05, 1.0),
)
_COSTS = st.none() | st.floats(0, 1)
_EVENTS = st.lists(
    st.builds(LoopAction, st.sampled_from(["read", "bash"]), st.sampled_from("abc"), _COSTS)
    | st.floats(0, 1),
    max_size=40,
)


@given(_OPTIONS, _EVENTS, st.data())
def test_a_snapshot_round_trip_gives_identical_future_verdicts(
    options: LoopGuardOptions, events: list[Event], data: st.DataObject
) -> None:
    split = data.draw(st.integers(0, len(events)))
    uninterrupted = LoopGuard(options)
    expected = feed(uninterrupted, events)[split:]
    before = LoopGuard(options)
    feed(before, events[:split])
    stored = json.loads(json.dumps(before.snapshot().to_json()))

    after = LoopGuard(options)
    after.restore(LoopGuardSnapshot.from_json(stored))

    assert feed(after, events[split:]) == expected
    assert after.snapshot() == uninterrupted.snapshot()


@given(
    st.lists(st.tuples(st.sampled_from(["read", "bash"]), st.text(max_size=5)), unique=True),
    st.integers(2, 5),
    st.integers(1, 5),
    st.integers(2, 4),
)
def test_distinct_actions_never_stop_on_repetition(
    pairs: list[tuple[str, str]], repeat_cap: int, max_period: int, laps: int
) -> None:
    options = LoopGuardOptions(
        repeat_cap=repeat_cap, max_cycle_period=max_period, cycle_min_occurrences=laps
    )

    verdicts = feed(LoopGuard(options), [LoopAction(tool, args) for tool, args in pairs])

    assert all(v.status == "ok" for v in verdicts)
