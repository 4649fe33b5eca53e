"""One turn's state and the ways it ends.

A turn counts its model requests and tokens, holds the calls the model announced in
the current step until each has a result, and ends with an `Outcome`, never an
exception. What lives here is the accounting and the closing: the stop reason a
model's stop maps to, the calls a cancel left open (paired with a "cancelled" result
so the history stays valid for the next request), and the verification seal the
outcome carries. The step itself (model call, tool round) is `loopd.engine.loop`'s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from loopd.engine.done import DoneChecks
from loopd.engine.guard import LoopGuard, LoopVerdict
from loopd.engine.limits import Limits
from loopd.engine.ports import Emitter, Journal
from loopd.engine.toolrun import TurnState
from loopd.protocol.events import Notice, TextBlock, ToolCallUpdated, VerificationUpdated
from loopd.protocol.messages import Message, ToolResultPart, ToolUsePart
from loopd.protocol.model import ModelStop, Usage
from loopd.protocol.turns import Outcome, StopReason

MODEL_STOPS: dict[ModelStop, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "end_turn",
    "pause_turn": "end_turn",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}
"""How a step the model ended on its own ends the turn."""


@dataclass(slots=True)
class Turn:
    """One turn's state. The loop guard is the turn's own: what it detects is a turn
    going in circles, and a stop it latches must not outlive the turn."""

    turn_id: str
    guard: LoopGuard
    iterations: int = 0
    usage: Usage = field(default_factory=Usage)
    context_tokens: int = 0
    state: TurnState = field(default_factory=TurnState)
    open_uses: tuple[ToolUsePart, ...] = ()
    results: dict[str, ToolResultPart] = field(default_factory=dict)

    def spend(self, usage: Usage, usd: float | None) -> LoopVerdict:
        """Charge the turn what was spent besides its steps' replies (a summary, an
        explore child's turn): its tokens count against the token ceiling, its cost
        against the guard's budget."""
        self.usage += usage
        return self.guard.observe_cost(usd)

    def outcome(self, reason: StopReason, error: str | None = None) -> Outcome:
        return Outcome(
            self.turn_id, reason, self.iterations, self.usage, self.context_tokens, error
        )


def iteration_note(limits: Limits) -> str:
    return f"Stopped: reached the limit of {limits.max_iterations} model requests in one turn."


async def close_open_calls(turn: Turn, journal: Journal, emitter: Emitter) -> None:
    """Give every announced call that has no result one saying it was cancelled:
    journaled at once (the results of the others already are), and shown failed."""
    for use in turn.open_uses:
        if use.id not in turn.results:
            part = ToolResultPart(use.id, "Cancelled by the user.", True)
            turn.results[use.id] = part
            await journal.append(Message("user", (part,)))
            await emitter.emit(
                ToolCallUpdated(use.id, status="failed", content=(TextBlock("Cancelled."),))
            )


Say = Callable[[str, Notice], Awaitable[None]]
"""Words loopd adds itself to the screen, with how to mark them."""


async def sealed(
    outcome: Outcome, checks: DoneChecks | None, emitter: Emitter, say: Say
) -> Outcome:
    """The turn's seal, kept on the outcome and sent as an event; said in a line
    too where the workspace defines done (elsewhere every edit would end with
    "unavailable", which the event already carries)."""
    if checks is None:
        return outcome
    protected = await checks.protected_writes()
    seal = checks.state.verification(checks.write_seq(), checks.done, protected)
    await emitter.emit(VerificationUpdated(seal))
    defined = checks.done.criteria or checks.done.protected
    if defined and (seal.seal != "clean" or protected.paths or protected.watch.capped):
        await say(seal.summary().capitalize(), "error" if seal.failed else "note")
    return replace(outcome, verification=seal)
