"""What a turn spends besides its steps' own replies, charged where a step's is.

A step's reply is charged as it arrives (`Engine._record_reply`). Two other kinds of
request cost money and tokens just the same, and a budget that misses them is not a
budget: the summaries compaction asks for (often a session's largest requests) and
the turns of explore children (`ToolResult.spent`). Each is added to the session's
running cost and, within a turn, to the turn's tokens (its `max_turn_tokens`) and
to the loop guard's cost budget (its `max_turn_cost_usd`), with the guard's one
warning told as a step's would be.
"""

from __future__ import annotations

from loopd.engine.compactor import ContextKeeper
from loopd.engine.guard import LoopVerdict
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
