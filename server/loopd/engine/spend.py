"""What a turn spends besides its steps' own replies, charged where a step's is.

A step's reply is charged as it arrives (`Engine._record_reply`). Two other kinds of
request cost money and tokens just the same, and a budget that misses them is not a
budget: the summaries compaction asks for (often a session's largest requests) and
the turns of explore children (`ToolResult.spent`). Each is added to the session's
running cost and, within a turn, to the turn's tokens (its `max_turn_tokens`) and
to the loop guard's cost budget (its `max_turn_cost_usd`), with the guard's one
warning told as a step's would be.

A child's turn is charged when its call returns, so it also runs within what the
parent turn has left (`Allowance`, set while a step's calls run): without that, one
explore call could spend its own ten requests' worth past a budget that was nearly
used up. Calls running in parallel each see the whole remainder, so the overshoot
is bounded by how many run at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, replace

from loopd.engine.compactor import ContextKeeper
from loopd.engine.guard import LoopVerdict
from loopd.engine.limits import Limits
from loopd.engine.notices import Notices
from loopd.engine.turn import Turn
from loopd.protocol.model import Usage


async def charge_summary(
    keeper: ContextKeeper, notices: Notices, turn: Turn | None, model: str, usage: Usage
) -> None:
    """One summary request of compaction; `turn` is None for `/compact`."""
    usd = keeper.charge(model, usage)
    if turn is not None:
        await notices.spending(turn.spend(usage, usd))


async def charge_calls(keeper: ContextKeeper, notices: Notices, turn: Turn) -> None:
    """What a tool round's calls spent on models. A cost budget they exhaust ends
    the turn after the round, before another request is paid for."""
    usage, usd = turn.state.take_spent()
    if usage == Usage() and usd is None:
        return
    keeper.add_cost(usd)
    verdict: LoopVerdict = turn.spend(usage, usd)
    await notices.spending(verdict)
    if verdict.status == "stop":
        turn.state.halt("max_turn_requests", f"Stopped by the loop guard: {verdict.reason}.")


@dataclass(frozen=True, slots=True)
class Allowance:
    """What is left of the running turn's token ceiling and cost budget (None: the
    turn has none)."""

    tokens: int | None = None
    cost_usd: float | None = None

    @property
    def spent(self) -> bool:
        """Nothing is left: a child must not start."""
        return (self.tokens is not None and self.tokens <= 0) or (
            self.cost_usd is not None and self.cost_usd <= 0
        )

    def within(self, limits: Limits) -> Limits:
        """`limits` with the ceilings lowered to what is left (never raised)."""
        tokens, cost = limits.max_turn_tokens, limits.max_turn_cost_usd
        if self.tokens is not None:
            tokens = min(tokens, self.tokens) if tokens else self.tokens
        if self.cost_usd is not None:
            cost = min(cost, self.cost_usd) if cost else self.cost_usd
        return replace(limits, max_turn_tokens=max(tokens, 0), max_turn_cost_usd=max(cost, 0.0))


UNBOUNDED = Allowance()  # outside a turn's step (a command the person typed, say)
ALLOWANCE: ContextVar[Allowance] = ContextVar("loopd_turn_allowance", default=UNBOUNDED)


@contextlib.contextmanager
def allowing(limits: Limits, turn: Turn) -> Iterator[None]:
    """While a step's calls run, `ALLOWANCE` is what the turn has left under
    `limits` (each call's task inherits it)."""
    tokens = limits.max_turn_tokens - turn.usage.total if limits.max_turn_tokens else None
    cost = turn.guard.snapshot().cumulative_cost_usd
    left = limits.max_turn_cost_usd - cost if limits.max_turn_cost_usd else None
    token = ALLOWANCE.set(Allowance(tokens, left))
    try:
        yield
    finally:
        ALLOWANCE.reset(token)
