"""The turn cycle: append the input, stream the model, run the tools it asked for,
feed the results back, repeat until it stops asking.

A turn always ends with an `Outcome`, never an exception: a prompt that outgrew the
window is compacted and the step retried (`loopd.engine.compactor`), any other
provider failure becomes a visible message plus a stop reason, a tool failure becomes
a result the model reads, and every way out of a step (an answer, a failure, a
cancel at any await, even while the step's usage is being delivered) pairs every
announced tool call with a result so the history stays valid for the next request.

The engine is pure orchestration over its ports. It is cancelled the asyncio way: the
owner cancels the task running `run` (or `exec`), which returns `cancelled`.

This module is the driver and the step (model call, then tool round); what it is
built from is `loopd.engine.config`, the turn's accounting and its endings are
`loopd.engine.turn`, and the shape of the messages it appends is
`loopd.engine.history`, a command the person typed `loopd.engine.typed`. The names
other packages use stay importable from here.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence

from loopd.context.compaction import Rejected
from loopd.context.reminders import reminder_part
from loopd.context.view import ContextView
from loopd.engine.compactor import Compacted, ContextKeeper, Failed, told_budget
from loopd.engine.config import EngineConfig, EnginePorts, streamer_of, tool_phase_of
from loopd.engine.done import settle
from loopd.engine.guard import LoopGuard, LoopVerdict
from loopd.engine.history import distinct_tool_ids, exec_message, prompt_parts, random_id
from loopd.engine.limits import guard_options
from loopd.engine.notices import Notices
from loopd.engine.ports import NOTHING_SPENT, Emitter, Spending
from loopd.engine.spend import allowing, charge_calls, charge_summary
from loopd.engine.steer import steer_text, unless_steered
from loopd.engine.streaming import NOBODY, ReplyStreamer
from loopd.engine.toolrun import ToolPhase
from loopd.engine.turn import MODEL_STOPS, Turn, close_open_calls, iteration_note, sealed
from loopd.engine.typed import EXEC_TOOL, run_typed
from loopd.protocol.events import (
    AgentMessageChunk,
    Notice,
    Prompt,
    TextBlock,
    UsageUpdated,
    UserMessageChunk,
)
from loopd.protocol.messages import Message, Part, TextPart, ToolUsePart
from loopd.protocol.model import ModelRequest, ModelStop, ResponseDone
from loopd.protocol.turns import Outcome, StopReason

__all__ = [
    "EXEC_TOOL",
    "Engine",
    "EngineConfig",
    "EnginePorts",
    "distinct_tool_ids",
    "exec_message",
    "prompt_parts",
    "random_id",
]


class Engine:
    """Runs turns against one session's history."""

    def __init__(
        self,
        session_id: str,
        config: EngineConfig,
        ports: EnginePorts,
        history: Sequence[Message] = (),
        start: int = 0,
        summary: str = "",
        spending: Spending = NOTHING_SPENT,
    ) -> None:
        """`start` and `summary` restore a compacted view: the model is sent the
        summary, then `history[start:]`. `spending` is what the session has spent,
        and the loop guard of a turn that was cut short (see `Spending`)."""
        self.session_id = session_id
        self.config = config
        self.ports = ports
        self._history = list(history)
        self._notices = Notices(self._say)  # budget notices, guides: until the model reads them
        self.keeper = ContextKeeper(
            ContextView(self._history, start, summary),
            config.compaction,
            ports.windows,
            ports.context,
            config.context_window,
            config.windows,
            cost=spending.cost,
        )
        self.keeper.noticed = told_budget(self.keeper.view)
        self._cut = spending.guard  # the guard the next turn goes on with
        self._tool_ids = {use.id for m in self._history for use in m.tool_uses}

    @property
    def spending(self) -> Spending:
        """What the session has spent, and the guard of a turn cut short that no
        turn has taken over yet: what a rebuilt engine (`/clear`) goes on with."""
        return Spending(self.keeper.cost, self._cut)

    def reconfigure(self, config: EngineConfig, ports: EnginePorts) -> None:
        """Swap model, mode or policy. A running turn picks the change up at its next
        step: the person who switches to full auto while a question is open means it
        for what comes next, not for what already streamed."""
        self.config = config
        self.ports = ports
        self.keeper.windows, self.keeper.journal = ports.windows, ports.context
        self.keeper.policy = config.compaction
        self.keeper.fallback_window = config.context_window
        self.keeper.configured = config.windows

    async def note(self, text: str) -> None:
        """Tell the model something that happened outside any turn (an undo, say), as
        a user message it reads with the next prompt."""
        await self._append(Message("user", (TextPart(text),)))

    @property
    def history(self) -> tuple[Message, ...]:
        return tuple(self._history)

    async def run(self, prompt: Prompt, reminders: Sequence[str] = ()) -> Outcome:
        """Execute one turn for `prompt` and say how it ended. `reminders` (what
        changed outside the conversation) reach the model beside the prompt."""
        turn = self._new_turn()
        turn.guard.restore(self._cut)
        self._cut = None
        if self.ports.steer is not None:
            self.ports.steer.begin()
        pending = [*reminders, *self._notices.take()]
        extra = (reminder_part(pending),) if pending else ()
        try:
            if self.ports.done is not None:
                self.ports.done.state.begin_turn()
                await self.ports.done.begin_turn()
            if self.ports.mentions is not None:
                prompt = await self.ports.mentions.resolve(prompt)
            await self._append(Message("user", (*prompt_parts(prompt), *extra)))
            outcome = await self._cycle(turn)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            await self._pair_after_cancel(turn)
            outcome = turn.outcome("cancelled")
        if self.ports.steer is not None and (late := self.ports.steer.end()):
            await self._heard(late)  # kept: read with the next prompt
        await self._keep_notices()  # given after the last reply: read with the next prompt
        self.ports.context.spent(Spending(self.keeper.cost))  # the turn ended
        return await self._sealed(outcome)

    async def exec(self, command: str) -> Outcome:
        """Run a command the PERSON typed (`!cmd`), outside any model turn: through
        the tool phase as `loopd.engine.typed.run_typed` says; the history gets the
        one message it makes."""
        turn = self._new_turn()
        call_id = self.ports.new_id("exec")
        limit = self.config.limits.max_result_bytes
        message, reason = await run_typed(self._tool_phase(turn), call_id, command, limit)
        await self._append(message)
        return turn.outcome(reason)

    async def compact(self) -> Compacted | Rejected:
        """`/compact`: fold the whole view into the summary, by the same mechanism as
        the automatic compaction. A provider failure raises."""
        if self.keeper.view.start >= len(self._history):
            return Rejected("")  # nothing to compact yet
        result = await self.keeper.compact(self._ask_quietly, self._request(), keep_segments=0)
        self.ports.context.spent(self.spending)  # its summaries cost the session
        return result

    def _new_turn(self) -> Turn:
        return Turn(self.ports.new_id("turn"), LoopGuard(guard_options(self.config.limits)))

    async def _cycle(self, turn: Turn) -> Outcome:
        """The turn driver: steps until one ends the turn or the request limit does."""
        limits = self.config.limits
        while True:
            if limits.max_iterations and turn.iterations >= limits.max_iterations:
                return await self._stop(turn, "max_turn_requests", iteration_note(limits))
            turn.iterations += 1
            await self._take_steer()
            if (outcome := await self._step(turn)) is not None:
                return outcome
            # Kept at every step: a turn cut by a crash goes on under its budgets.
            self.ports.context.spent(Spending(self.keeper.cost, turn.guard.snapshot()))

    async def _step(self, turn: Turn) -> Outcome | None:
        """One step: the model's reply, then the tools it asked for. The turn's
        outcome when the step ends it; None to take another step (the person
        interrupted, the model paused, or there are results for it to read)."""
        reply = await self._reply(turn)
        if reply is None:
            return None  # interrupted: the person said something; read it now
        if isinstance(reply, Outcome):
            return reply
        request, done = reply
        uses = await self._record_reply(turn, request, done)
        if done.stop == "pause_turn":
            return None
        if not uses:
            return await self._answered(turn, done.stop)
        return await self._tool_round(turn, uses)

    async def _record_reply(
        self, turn: Turn, request: ModelRequest, done: ResponseDone
    ) -> tuple[ToolUsePart, ...]:
        """The reply into the history and the turn's accounts; the calls it made."""
        turn.usage += done.usage
        parts = distinct_tool_ids(done.parts, self._tool_ids, self.ports.new_id)
        uses = tuple(p for p in parts if isinstance(p, ToolUsePart))
        # Paired before the first await: a cancel landing from here on finds every
        # announced call in `open_uses` and gives it a result.
        turn.open_uses = () if done.stop == "pause_turn" else uses
        await self._append(Message("assistant", parts))
        used, cost, spent = self.keeper.replied(request, done.usage)
        turn.context_tokens = used
        window = self.keeper.window(request.model)
        await self.ports.emitter.emit(UsageUpdated(used, window, cost))
        await self._announce_notices(request, turn.guard.observe_cost(spent))
        return uses

    async def _answered(self, turn: Turn, stop: ModelStop) -> Outcome | None:
        """The model called no tool: the turn ends, unless the person spoke while the
        reply finished or while the done criteria ran (answered in this turn), or the
        work is not done yet."""
        if self._steered():
            return None
        reentry = await self._settle()
        if reentry is not None:
            await self._append(Message("user", (TextPart(reentry),)))
            return None
        return None if self._steered() else turn.outcome(MODEL_STOPS[stop])

    def _steered(self) -> bool:
        return self.ports.steer is not None and self.ports.steer.pending()

    async def _tool_round(self, turn: Turn, uses: tuple[ToolUsePart, ...]) -> Outcome | None:
        """Run the calls, hand the model their results; the outcome if a tool's stop
        or the turn's token budget ends the turn."""
        with allowing(self.config.limits, turn):  # what a child's turn may spend
            await self._tool_phase(turn).run(uses, turn.state, turn.results)
        await charge_calls(self.keeper, self._notices, turn)
        await self._guide(turn)
        await self._append_results(turn)
        while turn.state.unshown:
            await self._say(turn.state.unshown.pop(0))
        if turn.state.stop is not None:
            return await self._stop(turn, turn.state.stop, turn.state.stop_message or "")
        ceiling = self.config.limits.max_turn_tokens
        if ceiling and turn.usage.total >= ceiling:
            return await self._stop(
                turn, "max_tokens", f"Stopped: the turn used its {ceiling}-token budget."
            )
        return None

    async def _reply(self, turn: Turn) -> tuple[ModelRequest, ResponseDone] | Outcome | None:
        """One step's reply, within the window (see `ContextKeeper.reply`); None when
        steering interrupted it."""
        ask = functools.partial(self._ask_quietly, turn=turn)  # its summaries are the turn's
        reply = await self.keeper.reply(self._request, self._send, ask, self._say)
        if isinstance(reply, Failed):
            return await self._stop(turn, reply.stop, reply.message, "error")
        return reply

    async def _send(self, request: ModelRequest) -> ResponseDone | None:
        """The model's reply to `request`; None when steering interrupted it.

        What it had said so far stays in the history (seed 002 deletes it; loopd keeps
        it, on purpose): the person saw those words and answered them, so a model
        that cannot see them reads the steering without its cause, and may say them
        again. Its thinking and any half-made call are dropped (an unsigned thinking
        block or a call without a result is a request the provider refuses)."""
        streamer = self._streamer()
        box = self.ports.steer
        if box is None:
            return await streamer.request(request)
        reply = await unless_steered(streamer.request(request), box)
        if reply is None and (partial := "".join(streamer.said).rstrip()):
            await self._append(Message("assistant", (TextPart(partial),)))
        return reply

    async def _announce_notices(self, request: ModelRequest, spending: LoopVerdict) -> None:
        """The one-shot budget notices (the context's, the turn's cost), shown now and
        read by the model with the next message. A cost budget that ran out stops the
        guard, which then refuses every further call of the turn."""
        await self._notices.add(self.keeper.notice(request))
        await self._notices.spending(spending)

    async def _guide(self, turn: Turn) -> None:
        """The instructions of folders the step's calls entered ride with its results
        (not shown: the person sees the calls themselves)."""
        touched, turn.state.touched = turn.state.touched, []
        if self.ports.guides is not None and touched:
            self._notices.pending += await self.ports.guides.entered(touched)

    async def _take_steer(self) -> None:
        if self.ports.steer is not None and (said := self.ports.steer.take()):
            await self._heard(said)

    async def _heard(self, said: str) -> None:
        """What the person said mid-turn: in the history and on the screen."""
        await self._append(Message("user", (TextPart(steer_text(said)),)))
        await self.ports.emitter.emit(UserMessageChunk(TextBlock(said), self.ports.new_id("user")))

    async def _settle(self) -> str | None:
        """The model stopped calling tools: the text that sends the turn back because
        it is not done (see `loopd.engine.done`), or None to end it."""
        p = self.ports
        return None if p.done is None else await settle(p.done, p.emitter, p.new_id)

    async def _sealed(self, outcome: Outcome) -> Outcome:
        return await sealed(outcome, self.ports.done, self.ports.emitter, self._say)

    async def _say(self, text: str, notice: Notice = "note") -> None:
        """Words loopd adds itself, marked as such (a frontend may set them apart)."""
        await self.ports.emitter.emit(
            AgentMessageChunk(f"\n\n{text}\n", self.ports.new_id("msg"), notice)
        )

    def _request(self) -> ModelRequest:
        cfg = self.config
        return ModelRequest(
            model=cfg.model,
            system=cfg.system,
            messages=self.keeper.view.messages(),
            tools=tuple(self.ports.tools.specs()),
            max_tokens=self.keeper.reserve(cfg.model, cfg.max_tokens),
            thinking=cfg.thinking,
        )

    async def _ask_quietly(self, request: ModelRequest, turn: Turn | None = None) -> ResponseDone:
        """A request of the engine's own (a summary): retried like a turn's, shown to
        nobody, paid for like one: the session's cost, and within a turn (`turn`)
        the turn's token and cost budgets."""
        done = await self._streamer(NOBODY).request(request)
        await charge_summary(self.keeper, self._notices, turn, request.model, done.usage)
        return done

    def _streamer(self, emitter: Emitter | None = None) -> ReplyStreamer:
        return streamer_of(self.config, self.ports, emitter)

    def _tool_phase(self, turn: Turn) -> ToolPhase:
        return tool_phase_of(self.session_id, self.config, self.ports, turn.guard)

    async def _append(self, message: Message) -> None:
        self._history.append(message)
        self.keeper.view.appended()
        await self.ports.journal.append(message)

    async def _append_results(self, turn: Turn) -> None:
        """The step's results as one message, in the model's order. Already journaled
        one by one as they finished, so only the in-memory history grows by it. The
        pending notices follow (the budget notice, a folder's instructions), for the
        model to read with the results (`_keep_notices`)."""
        parts: tuple[Part, ...] = tuple(turn.results[use.id] for use in turn.open_uses)
        turn.open_uses = ()
        turn.results = {}
        self._history.append(Message("user", parts))
        self.keeper.view.appended()
        await self._keep_notices()

    async def _keep_notices(self) -> None:
        """The pending notices as a message of their own, journaled: a reloaded
        session still has them in the model's context, and is not told again."""
        notices = self._notices.take()
        if notices:
            await self._append(Message("user", (reminder_part(notices),)))

    async def _pair_after_cancel(self, turn: Turn) -> None:
        """Close every announced call that has no result: the screen shows it failed,
        the history gets a result saying it was cancelled."""
        if turn.open_uses:
            await close_open_calls(turn, self.ports.journal, self.ports.emitter)
            await self._append_results(turn)

    async def _stop(
        self, turn: Turn, reason: StopReason, message: str, notice: Notice = "note"
    ) -> Outcome:
        """End the turn with a reason the person can read: a `note` for a limit
        reached, an `error` when a request failed."""
        await self._say(message, notice)
        return turn.outcome(reason, message)
