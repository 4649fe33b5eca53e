"""The tool phase of one step: admit, declare, announce, decide, schedule, run.

Every call the model asked for ends with exactly one result, in the model's order,
whatever happens: an invalid argument, a limit, a policy denial, a rejection and a
crash inside a tool all become error results the model reads. Only cancellation
escapes, and the engine pairs what is left.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from loopd.engine.guard import LoopAction, LoopGuard
from loopd.engine.limits import Limits, bound_shown, call_key, truncate_result
from loopd.engine.ports import (
    Approver,
    Declaration,
    Emitter,
    Journal,
    Policy,
    PolicyDecision,
    ToolBox,
    ToolCall,
    ToolResult,
    Verdict,
)
from loopd.engine.schedule import ToolExecution, schedule
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.errors import ToolInputError, ToolUnusable
from loopd.protocol.events import TextBlock, ToolCallStarted, ToolCallUpdated, ToolContent
from loopd.protocol.messages import Message, ToolResultPart, ToolUsePart
from loopd.protocol.model import INVALID_JSON_KEY, Usage
from loopd.protocol.turns import StopReason


@dataclass(slots=True)
class TurnState:
    """What one turn has done so far, across its steps. `warnings` are the loop
    guard's, by the call they ride on: the model reads each with that call's result,
    and the person sees each once (`unshown`, until the engine shows them)."""

    stop: StopReason | None = None
    stop_message: str | None = None
    warnings: dict[str, str] = field(default_factory=dict)
    unshown: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)  # paths declared, until guided
    spent: Usage = field(default_factory=Usage)  # by the calls on models, until charged
    spent_usd: float | None = None

    def halt(self, reason: StopReason, message: str) -> None:
        if self.stop is None:
            self.stop, self.stop_message = reason, message

    def charge(self, result: ToolResult) -> None:
        """Keep what a call spent on models, for the engine to charge the turn."""
        if result.spent is not None:
            self.spent += result.spent
        if result.cost_usd is not None:
            self.spent_usd = (self.spent_usd or 0.0) + result.cost_usd

    def take_spent(self) -> tuple[Usage, float | None]:
        spent, usd = self.spent, self.spent_usd
        self.spent, self.spent_usd = Usage(), None
        return spent, usd


@dataclass(slots=True)
class ToolPhase:
    session_id: str
    tools: ToolBox
    policy: Policy
    approver: Approver
    emitter: Emitter
    journal: Journal
    limits: Limits
    guard: LoopGuard
    cancelled: bool = False

    async def run(
        self, uses: Sequence[ToolUsePart], turn: TurnState, results: dict[str, ToolResultPart]
    ) -> None:
        """Run the calls of one reply; fill `results` by tool-use id as they finish.

        Each result is journaled the moment it exists, alone: if the process dies
        mid-phase, the calls that ran keep their results on disk and are not run a
        second time after a restart (see `loopd.store.reconcile`)."""
        execs = [await self._prepare(i, use, turn) for i, use in enumerate(uses)]
        for ex in execs:
            await self.emitter.emit(_announcement(ex))
            if ex.declaration is not None:
                turn.touched += (*ex.declaration.reads, *ex.declaration.writes)
        decisions = {ex.index: self._decide(ex) for ex in execs}
        groups = schedule(
            execs,
            self.limits.max_parallel,
            needs_approval=lambda ex: decisions[ex.index].verdict is Verdict.ASK,
        )
        for group in groups:
            async with asyncio.TaskGroup() as tasks:
                for ex in group:
                    tasks.create_task(self._execute(ex, decisions[ex.index], results, turn))
            if self.cancelled:
                # An approval answered "cancelled": the person stopped the turn. Raised
                # here, in the phase's own task, because a child's CancelledError
                # would only end that child.
                raise asyncio.CancelledError

    async def run_alone(self, call: ToolCall) -> ToolResult:
        """One call that is not the model's (a command the person typed): declared,
        shown, decided, asked and run exactly as the model's would be, but its result
        is returned for the caller to record, not journaled as a tool result. The loop
        limits do not count it: they watch the model. Raises `CancelledError` when
        the person cancels, after the screen shows the call failed."""
        try:
            ex = ToolExecution(0, call, await self.tools.declare(call))
        except ToolInputError as err:
            ex = ToolExecution(0, call, None, _undeclared(call, err))
        await self.emitter.emit(_announcement(ex))
        refusal = await self._refusal(ex, self._decide(ex))
        if refusal is None:
            await self.emitter.emit(ToolCallUpdated(call.id, status="in_progress"))
            try:
                result = await self.tools.run(call, self._progress(call.id))
            except asyncio.CancelledError:
                cancelled = (TextBlock("Cancelled."),)
                await self.emitter.emit(
                    ToolCallUpdated(call.id, status="failed", content=cancelled)
                )
                raise
        else:
            result = ToolResult(refusal, is_error=True)
        await self._show(call, result, result.output)
        if self.cancelled:
            raise asyncio.CancelledError
        return result

    async def _prepare(self, index: int, call: ToolCall, turn: TurnState) -> ToolExecution:
        refusal = self._admit(call, turn)
        if refusal is not None:
            return ToolExecution(index, call, None, refusal)
        try:
            declaration = await self.tools.declare(call)
        except ToolInputError as err:
            return ToolExecution(index, call, None, _undeclared(call, err))
        return ToolExecution(index, call, declaration)

    def _admit(self, call: ToolCall, turn: TurnState) -> str | None:
        """The limits, checked before anything runs. Each refusal is a result the model
        reads; the ones that mean "this turn is going nowhere" also end the turn.

        A call whose arguments are not JSON is an action like any other: the guard
        sees it first (its raw text is its input), so a model that keeps sending
        broken calls meets the repeat cap and the call budget, which bound the turn
        even where the iteration cap is off."""
        verdict = self.guard.observe(LoopAction(call.name, call_key(call)))
        match verdict.status:
            case "stop":
                message = f"Stopped by the loop guard: {verdict.reason}."
                turn.halt("max_turn_requests", message)
                return message
            case "warn":
                turn.warnings[call.id] = (
                    f"[Loop guard: {verdict.reason} in this turn. Finish the task or "
                    "stop and report; the turn ends when the budget runs out.]"
                )
                turn.unshown.append(f"[Loop guard: {verdict.reason} in this turn.]")
            case "ok":
                pass
        if INVALID_JSON_KEY in call.input:
            raw = call.input[INVALID_JSON_KEY]
            return f"Invalid arguments for {call.name}: not valid JSON: {raw!r}"
        return None

    def _decide(self, ex: ToolExecution) -> PolicyDecision:
        if ex.declaration is None:
            return PolicyDecision(Verdict.DENY, ex.error or "")
        return self.policy.decide(ex.call, ex.declaration)

    async def _execute(
        self,
        ex: ToolExecution,
        decision: PolicyDecision,
        results: dict[str, ToolResultPart],
        turn: TurnState,
    ) -> None:
        call = ex.call
        refusal = await self._refusal(ex, decision)
        if refusal is not None:
            await self._finish(call, ToolResult(refusal, is_error=True), results)
            return
        await self.emitter.emit(ToolCallUpdated(call.id, status="in_progress"))
        result = await self.tools.run(call, self._progress(call.id))
        turn.charge(result)
        await self._finish(call, result, results, turn.warnings.pop(call.id, ""))

    def _progress(self, call_id: str) -> _Progress:
        return _Progress(self.emitter, call_id, self.limits.max_shown_chars)

    async def _refusal(self, ex: ToolExecution, decision: PolicyDecision) -> str | None:
        """Why this call must not run, or None when it may. Asking happens here."""
        if ex.declaration is None:
            return ex.error or "invalid call"
        match decision.verdict:
            case Verdict.DENY:
                return f"Denied by policy: {decision.reason}"
            case Verdict.ASK:
                # Checked now, not at declaration: an earlier call of the step may
                # have made it runnable (a write creating the file an edit changes).
                unrunnable = await self.tools.refusal(ex.call)
                if unrunnable is not None:
                    return unrunnable
                answer = await self._ask(ex.declaration, ex.call, decision)
                if answer.allowed:
                    return None
                if answer is ApprovalDecision.CANCELLED:
                    self.cancelled = True
                    return "Cancelled by the user."
                return "The user rejected this call."
            case Verdict.ALLOW:
                return None

    async def _ask(
        self, declaration: Declaration, call: ToolCall, decision: PolicyDecision
    ) -> ApprovalDecision:
        request = ApprovalRequest(
            session_id=self.session_id,
            tool_call_id=call.id,
            tool_name=call.name,
            title=declaration.title,
            kind=declaration.kind,
            raw_input=call.input,
            reason=decision.reason,
            content=declaration.preview,
            locations=declaration.locations,
        )
        answer = await self.approver.approve(request)
        self.policy.remember(call, declaration, answer)
        return answer

    async def _finish(
        self,
        call: ToolCall,
        result: ToolResult,
        results: dict[str, ToolResultPart],
        warning: str = "",
    ) -> None:
        output = truncate_result(result.output, self.limits.max_result_bytes)
        told = f"{output}\n\n{warning}" if warning else output
        part = ToolResultPart(call.id, told, result.is_error, result.images)
        results[call.id] = part
        await self.journal.append(Message("user", (part,)))
        await self._show(call, result, told)

    async def _show(self, call: ToolCall, result: ToolResult, output: str) -> None:
        shown = bound_shown(result.content or (TextBlock(output),), self.limits.max_shown_chars)
        await self.emitter.emit(
            ToolCallUpdated(
                call.id,
                status="failed" if result.is_error else "completed",
                content=shown,
                locations=result.locations or None,
                raw_output=result.raw_output,
            )
        )


@dataclass(frozen=True, slots=True)
class _Progress:
    emitter: Emitter
    tool_call_id: str
    max_shown_chars: int

    async def __call__(self, content: tuple[ToolContent, ...]) -> None:
        content = bound_shown(content, self.max_shown_chars)
        await self.emitter.emit(ToolCallUpdated(self.tool_call_id, content=content))


def _announcement(ex: ToolExecution) -> ToolCallStarted:
    decl = ex.declaration
    if decl is None:
        return ToolCallStarted(ex.call.id, ex.call.name, raw_input=ex.call.input)
    return ToolCallStarted(
        ex.call.id,
        decl.title,
        kind=decl.kind,
        raw_input=ex.call.input,
        locations=decl.locations,
        content=decl.preview,
    )


def _undeclared(call: ToolCall, err: ToolInputError) -> str:
    """The result of a call whose declaration failed: its arguments, or the reason
    the tool gave (`ToolUnusable`: a FIFO, a swapped path)."""
    if isinstance(err, ToolUnusable):
        return str(err)
    return f"Invalid arguments for {call.name}: {err}"
