"""A pure repetition and budget guard for the agent's action loop.

It stops a run that repeats the same action, cycles through a short sequence of
actions, or exceeds a cost or action budget, and warns once before a budget runs out.
It has no I/O and no clock: it is stateful but otherwise pure, and the caller persists
the snapshot it returns so a resumed session keeps its history and its budgets.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

LoopStatus = Literal["ok", "warn", "stop"]

SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class LoopAction:
    """One observed tool invocation. `args_key` is the canonical form of its input
    (`loopd.engine.limits.canonical_input`); `cost_usd` is optional."""

    tool: str
    args_key: str
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class LoopVerdict:
    """The result of one observation. `reason` is None exactly when status is "ok"."""

    status: LoopStatus
    reason: str | None = None


OK = LoopVerdict("ok")

_STOPPED = "the loop guard stopped this run"


@dataclass(frozen=True, slots=True)
class LoopGuardOptions:
    """How a guard judges a run.

    - `repeat_cap`: this many identical consecutive actions stop the run. Three,
      because a pathological loop shows itself in three repeats, and two is often a
      legitimate retry after a transient failure. None switches the check off.
    - `max_cycle_period`: the longest cycle inspected (periods 2..N; period 1 is the
      repeat cap). Four covers the read-edit-test-read dances seen in practice while
      keeping the history, and the check, tiny.
    - `cycle_min_occurrences`: copies of a cycle that prove it. Three, for the same
      reason as the repeat cap: two laps can be a deliberate second attempt.
    - `max_cost_usd`, `max_actions`: optional budgets; None means no budget. Exceeding
      one stops the run.
    - `warn_fraction`: the share of a budget at which one warning is given, so the
      person (or the model) can wrap up before the hard stop.
    """

    repeat_cap: int | None = 3
    max_cycle_period: int = 4
    cycle_min_occurrences: int = 3
    max_cost_usd: float | None = None
    max_actions: int | None = None
    warn_fraction: float = 0.8

    def __post_init__(self) -> None:
        if self.repeat_cap is not None and self.repeat_cap < 2:
            raise ValueError("repeat_cap must be at least 2: one action is not a repeat")
        if self.cycle_min_occurrences < 2:
            raise ValueError("cycle_min_occurrences must be at least 2")
        if not 0 < self.warn_fraction <= 1:
            raise ValueError("warn_fraction must be in (0, 1]")

    @property
    def history_size(self) -> int:
        """How many past actions the checks can ever look at."""
        return max(self.repeat_cap or 0, self.max_cycle_period * self.cycle_min_occurrences)


@dataclass(frozen=True, slots=True)
class LoopGuardSnapshot:
    """The guard's whole persistable state. `actions` are action keys, oldest first,
    bounded by the options' history size."""

    actions: tuple[str, ...] = ()
    action_count: int = 0
    cumulative_cost_usd: float = 0.0
    warned_cost: bool = False
    warned_actions: bool = False
    stopped: bool = False
    stop_reason: str | None = None
    version: int = SNAPSHOT_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "actions": list(self.actions),
            "actionCount": self.action_count,
            "cumulativeCostUsd": self.cumulative_cost_usd,
            "warnedCost": self.warned_cost,
            "warnedActions": self.warned_actions,
            "stopped": self.stopped,
            "stopReason": self.stop_reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoopGuardSnapshot | None:
        """Parse `to_json` output. None for a version this code does not know, so
        `guard.restore(LoopGuardSnapshot.from_json(data))` starts fresh rather than
        guessing at a format it cannot read. Malformed data of a known version raises
        `ValueError`: a corrupt store is worth noticing."""
        if data.get("version") != SNAPSHOT_VERSION:
            return None
        try:
            actions = data["actions"]
            count = data["actionCount"]
            cost = data["cumulativeCostUsd"]
            reason = data.get("stopReason")
            if not (
                isinstance(actions, list)
                and all(isinstance(a, str) for a in actions)
                and _is_int(count)
                and (_is_int(cost) or isinstance(cost, float))
                and (reason is None or isinstance(reason, str))
            ):
                raise ValueError("loop guard snapshot has fields of the wrong type")
            return cls(
                actions=tuple(actions),
                action_count=count,
                cumulative_cost_usd=float(cost),
                warned_cost=_flag(data, "warnedCost"),
                warned_actions=_flag(data, "warnedActions"),
                stopped=_flag(data, "stopped"),
                stop_reason=reason,
            )
        except KeyError as missing:
            raise ValueError(f"loop guard snapshot lacks {missing}") from None


class LoopGuard:
    """Observes actions and costs and reports when the loop should stop.

    Once it has said stop, every later observation says stop with the same reason:
    a stopped run stays stopped until a new guard (or an older snapshot) replaces it.
    """

    def __init__(self, options: LoopGuardOptions | None = None) -> None:
        self._options = options or LoopGuardOptions()
        self._history: deque[str] = deque(maxlen=self._options.history_size)
        self._action_count = 0
        self._cost_usd = 0.0
        self._warned_actions = False
        self._warned_cost = False
        self._stop_reason: str | None = None

    def observe(self, action: LoopAction) -> LoopVerdict:
        """Record one action and judge the run: repetition first, then budgets."""
        if self._stop_reason is not None:
            return LoopVerdict("stop", self._stop_reason)
        self._charge(action.cost_usd)
        self._history.append(_action_key(action))
        self._action_count += 1
        reason = self._repetition(action.tool)
        if reason is not None:
            return self._stop(reason)
        return self._judge_budgets()

    def observe_cost(self, cost_usd: float | None) -> LoopVerdict:
        """Charge a cost that has no tool action (a model call, say). Repetition and
        the action count are left alone."""
        if self._stop_reason is not None:
            return LoopVerdict("stop", self._stop_reason)
        self._charge(cost_usd)
        return self._judge_budgets()

    def snapshot(self) -> LoopGuardSnapshot:
        return LoopGuardSnapshot(
            actions=tuple(self._history),
            action_count=self._action_count,
            cumulative_cost_usd=self._cost_usd,
            warned_cost=self._warned_cost,
            warned_actions=self._warned_actions,
            stopped=self._stop_reason is not None,
            stop_reason=self._stop_reason,
        )

    def restore(self, snapshot: LoopGuardSnapshot | None) -> None:
        """Replace the state with `snapshot`. None and unknown versions are ignored,
        leaving the guard as it was."""
        if snapshot is None or snapshot.version != SNAPSHOT_VERSION:
            return
        self._history.clear()
        self._history.extend(snapshot.actions)  # the deque keeps only the newest
        self._action_count = snapshot.action_count
        self._cost_usd = snapshot.cumulative_cost_usd
        self._warned_actions = snapshot.warned_actions
        self._warned_cost = snapshot.warned_cost
        self._stop_reason = (snapshot.stop_reason or _STOPPED) if snapshot.stopped else None

    def _charge(self, cost_usd: float | None) -> None:
        if cost_usd is None:
            return
        if not (math.isfinite(cost_usd) and cost_usd >= 0):
            raise ValueError(f"cost must be a finite, non-negative amount: {cost_usd}")
        self._cost_usd += cost_usd

    def _repetition(self, tool: str) -> str | None:
        history = list(self._history)
        cap = self._options.repeat_cap
        if cap is not None and len(history) >= cap and len(set(history[-cap:])) == 1:
            return f"the same {tool} call {cap} times in a row"
        laps = self._options.cycle_min_occurrences
        period = _cycle_period(history, self._options.max_cycle_period, laps)
        if period is not None:
            return f"the same {period} actions repeated {laps} times in a cycle"
        return None

    def _judge_budgets(self) -> LoopVerdict:
        opts = self._options
        max_actions, max_cost = opts.max_actions, opts.max_cost_usd
        if max_actions is not None and self._action_count > max_actions:
            return self._stop(f"more than {max_actions} actions")
        if max_cost is not None and self._cost_usd > max_cost:
            return self._stop(f"more than ${max_cost:g} spent")
        warnings: list[str] = []
        near = opts.warn_fraction
        if not self._warned_actions and _nearing(self._action_count, max_actions, near):
            self._warned_actions = True
            warnings.append(f"{self._action_count} of {max_actions} actions used")
        if not self._warned_cost and _nearing(self._cost_usd, max_cost, near):
            self._warned_cost = True
            warnings.append(f"${self._cost_usd:.4g} of ${max_cost:g} spent")
        return LoopVerdict("warn", "; ".join(warnings)) if warnings else OK

    def _stop(self, reason: str) -> LoopVerdict:
        self._stop_reason = reason
        return LoopVerdict("stop", reason)


def _cycle_period(history: list[str], max_period: int, min_occurrences: int) -> int | None:
    """The smallest period p in 2..max_period such that the tail of `history` is
    `min_occurrences` copies of one p-long sequence of more than one distinct action.

    A sequence of one repeated action is the repeat cap's business, and a cycle whose
    true period divides p is found at that smaller period first.
    """
    for period in range(2, max_period + 1):
        span = period * min_occurrences
        if len(history) < span:
            break
        tail = history[-span:]
        unit = tail[:period]
        if len(set(unit)) > 1 and all(tail[i] == unit[i % period] for i in range(span)):
            return period
    return None


def _nearing(used: float, budget: float | None, fraction: float) -> bool:
    return budget is not None and used >= fraction * budget


def _action_key(action: LoopAction) -> str:
    """One string per distinct action, unambiguous whatever the tool name holds."""
    return json.dumps([action.tool, action.args_key], ensure_ascii=False)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _flag(data: Mapping[str, Any], key: str) -> bool:
    value = data[key]
    if not isinstance(value, bool):
        raise ValueError(f"loop guard snapshot field {key} is not a boolean")
    return value
