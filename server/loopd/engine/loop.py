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
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from loopd.context.compaction import CompactionPolicy, Rejected
from loopd.context.reminders import reminder_part
from loopd.context.view import ContextView
from loopd.engine.compactor import (
    Compacted,
    ContextKeeper,
    Failed,
    MemoryWindows,
    NoContextJournal,
)
from loopd.engine.done import DoneChecks, settle
from loopd.engine.guard import LoopGuard, LoopVerdict
from loopd.engine.limits import Limits, guard_options, truncate_result
from loopd.engine.ports import (
    Approver,
    Clock,
    ContextJournal,
    Emitter,
    Journal,
    Mentions,
    Policy,
    Provider,
    ToolBox,
    ToolCall,
    ToolResult,
    WindowBook,
)
from loopd.engine.steer import SteerBox, steer_text, unless_steered
from loopd.engine.streaming import ReplyStreamer, RetryPolicy
from loopd.engine.toolrun import ToolPhase, TurnState
from loopd.protocol.events import (
    AgentMessageChunk,
    EmbeddedResourceBlock,
    ImageBlock,
    Notice,
    Prompt,
    ResourceLinkBlock,
    SessionEvent,
    TextBlock,
    ToolCallUpdated,
    UsageUpdated,
    UserMessageChunk,
    VerificationUpdated,
)
from loopd.protocol.messages import (
    ImagePart,
    Message,
    Part,
    TextPart,
    ToolResultPart,
    ToolUsePart,
)
from loopd.protocol.model import ModelRequest, ModelStop, ResponseDone, ThinkingLevel, Usage
from loopd.protocol.turns import Outcome, StopReason

EXEC_TOOL = "bash"
"""The tool a command typed by the person runs through: through the tool and its
policy and sandbox, never around them. `!` skips the model, not the boundary."""


def random_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True, slots=True)
class EngineConfig:
    model: str
    system: str = ""
    limits: Limits = field(default_factory=Limits)
    thinking: ThinkingLevel = "off"
    max_tokens: int = 8192
    context_window: int = 200_000  # for a model whose window nothing has told
    windows: Mapping[str, int] = field(default_factory=dict)  # configured, per model
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    show_reasoning: bool = True
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)


@dataclass(slots=True)
class EnginePorts:
    provider: Provider
    tools: ToolBox
    emitter: Emitter
    approver: Approver
    policy: Policy
    journal: Journal
    clock: Clock
    new_id: Callable[[str], str] = random_id
    jitter: Callable[[], float] = random.random
    windows: WindowBook = field(default_factory=MemoryWindows)
    context: ContextJournal = field(default_factory=NoContextJournal)
    done: DoneChecks | None = None  # the workspace's definition of done, if any
    steer: SteerBox | None = None  # what the person says while a turn runs
    mentions: Mentions | None = None  # mentioned context read in at a turn's start


_MODEL_STOPS: dict[ModelStop, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "end_turn",
    "pause_turn": "end_turn",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


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
    ) -> None:
        """`start` and `summary` restore a compacted view: the model is sent the
        summary, then `history[start:]`."""
        self.session_id = session_id
        self.config = config
        self.ports = ports
        self._history = list(history)
        self._notices: list[str] = []  # budget notices, until the model reads them
        self.keeper = ContextKeeper(
            ContextView(self._history, start, summary),
            config.compaction,
            ports.windows,
            ports.context,
            config.context_window,
            config.windows,
        )
        self._tool_ids = {use.id for m in self._history for use in m.tool_uses}

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
        turn = _Turn(self.ports.new_id("turn"), LoopGuard(guard_options(self.config.limits)))
        if self.ports.steer is not None:
            self.ports.steer.begin()
        pending = [*reminders, *self._take_notices()]
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
        return await self._sealed(outcome)

    async def exec(self, command: str) -> Outcome:
        """Run a command the PERSON typed (`!cmd`), outside any model turn.

        The call goes through `EXEC_TOOL` exactly as the model's would: declared,
        decided by the policy, asked when it crosses the boundary, run in the sandbox.
        The screen gets the tool events it already draws. The history gets ONE user
        message holding the command and its output, because the person ran it and
        the next turn must know what they saw; a user message, not a tool result,
        because no provider accepts a result without a call, and inventing a call the
        model never made would put words in its mouth."""
        turn = _Turn(self.ports.new_id("turn"), LoopGuard(guard_options(self.config.limits)))
        call = ToolCall(self.ports.new_id("exec"), EXEC_TOOL, {"command": command})
        reason: StopReason = "end_turn"
        try:
            result = await self._tool_phase(turn).run_alone(call)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            result, reason = ToolResult("Cancelled by the user.", is_error=True), "cancelled"
        output = truncate_result(result.output, self.config.limits.max_result_bytes)
        await self._append(Message("user", (TextPart(exec_message(command, output)),)))
        return turn.outcome(reason)

    async def compact(self) -> Compacted | Rejected:
        """`/compact`: fold the whole view into the summary, by the same mechanism as
        the automatic compaction. A provider failure raises."""
        if self.keeper.view.start >= len(self._history):
            return Rejected("")  # nothing to compact yet
        return await self.keeper.compact(self._ask_quietly, self._request(), keep_segments=0)

    async def _cycle(self, turn: _Turn) -> Outcome:
        limits = self.config.limits
        while True:
            if limits.max_iterations and turn.iterations >= limits.max_iterations:
                return await self._stop(turn, "max_turn_requests", _iteration_note(limits))
            turn.iterations += 1
            await self._take_steer()
            reply = await self._reply(turn)
            if reply is None:
                continue  # interrupted: the person said something; read it now
            if isinstance(reply, Outcome):
                return reply
            request, done = reply
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
            if done.stop == "pause_turn":
                continue
            if not uses:
                if self.ports.steer is not None and self.ports.steer.pending():
                    continue  # said while the reply finished: answer it in this turn
                reentry = await self._settle()
                if reentry is None:
                    return turn.outcome(_MODEL_STOPS[done.stop])
                await self._append(Message("user", (TextPart(reentry),)))
                continue
            await self._tool_phase(turn).run(uses, turn.state, turn.results)
            self._append_results(turn)
            while turn.state.unshown:
                await self._say(turn.state.unshown.pop(0))
            if turn.state.stop is not None:
                return await self._stop(turn, turn.state.stop, turn.state.stop_message or "")
            ceiling = limits.max_turn_tokens
            if ceiling and turn.usage.total >= ceiling:
                return await self._stop(
                    turn, "max_tokens", f"Stopped: the turn used its {ceiling}-token budget."
                )

    async def _reply(self, turn: _Turn) -> tuple[ModelRequest, ResponseDone] | Outcome | None:
        """One step's reply, within the window (see `ContextKeeper.reply`); None when
        steering interrupted it."""
        reply = await self.keeper.reply(self._request, self._send, self._ask_quietly, self._say)
        if isinstance(reply, Failed):
            return await self._stop(turn, reply.stop, reply.message, "error")
        return reply

    async def _send(self, request: ModelRequest) -> ResponseDone | None:
        """The model's reply to `request`; None when steering interrupted it (what it
        had said so far stays in the history, so it knows where it was)."""
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
        notices = [self.keeper.notice(request)]
        if spending.status == "warn":
            notices.append(f"Loop guard: {spending.reason} in this turn.")
        for notice in filter(None, notices):
            self._notices.append(notice)
            await self._say(f"[{notice}]")

    def _take_notices(self) -> list[str]:
        notices, self._notices = self._notices, []
        return notices

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
        """The turn's seal, kept on the outcome and sent as an event; said in a line
        too where the workspace defines done (elsewhere every edit would end with
        "unavailable", which the event already carries)."""
        checks = self.ports.done
        if checks is None:
            return outcome
        protected = await checks.protected_writes()
        seal = checks.state.verification(checks.write_seq(), checks.done, protected)
        await self.ports.emitter.emit(VerificationUpdated(seal))
        defined = checks.done.criteria or checks.done.protected
        if defined and (seal.seal != "clean" or protected):
            await self._say(seal.summary().capitalize(), "error" if seal.failed else "note")
        return replace(outcome, verification=seal)

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
            max_tokens=cfg.max_tokens,
            thinking=cfg.thinking,
        )

    async def _ask_quietly(self, request: ModelRequest) -> ResponseDone:
        """A request of the engine's own (a summary): retried like a turn's, shown to
        nobody."""
        return await self._streamer(_NOBODY).request(request)

    def _streamer(self, emitter: Emitter | None = None) -> ReplyStreamer:
        p = self.ports
        return ReplyStreamer(
            p.provider,
            emitter or p.emitter,
            p.clock,
            p.new_id,
            p.jitter,
            self.config.retry,
            self.config.show_reasoning,
        )

    def _tool_phase(self, turn: _Turn) -> ToolPhase:
        p = self.ports
        return ToolPhase(
            self.session_id,
            p.tools,
            p.policy,
            p.approver,
            p.emitter,
            p.journal,
            self.config.limits,
            turn.guard,
        )

    async def _append(self, message: Message) -> None:
        self._history.append(message)
        self.keeper.view.appended()
        await self.ports.journal.append(message)

    def _append_results(self, turn: _Turn) -> None:
        """The step's results as one message, in the model's order. Already journaled
        one by one as they finished, so only the in-memory history grows here. A
        pending budget notice rides along, for the model to read with the results."""
        parts: tuple[Part, ...] = tuple(turn.results[use.id] for use in turn.open_uses)
        turn.open_uses = ()
        turn.results = {}
        notices = self._take_notices()
        if notices:
            parts = (*parts, reminder_part(notices))
        self._history.append(Message("user", parts))
        self.keeper.view.appended()

    async def _pair_after_cancel(self, turn: _Turn) -> None:
        """Close every announced call that has no result: the screen shows it failed,
        the history gets a result saying it was cancelled."""
        if not turn.open_uses:
            return
        for use in turn.open_uses:
            if use.id not in turn.results:
                part = ToolResultPart(use.id, "Cancelled by the user.", True)
                turn.results[use.id] = part
                await self.ports.journal.append(Message("user", (part,)))
                await self.ports.emitter.emit(
                    ToolCallUpdated(use.id, status="failed", content=(TextBlock("Cancelled."),))
                )
        self._append_results(turn)

    async def _stop(
        self, turn: _Turn, reason: StopReason, message: str, notice: Notice = "note"
    ) -> Outcome:
        """End the turn with a reason the person can read: a `note` for a limit
        reached, an `error` when a request failed."""
        await self._say(message, notice)
        return turn.outcome(reason, message)


@dataclass(slots=True)
class _Turn:
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

    def outcome(self, reason: StopReason, error: str | None = None) -> Outcome:
        return Outcome(
            self.turn_id, reason, self.iterations, self.usage, self.context_tokens, error
        )


class _Nobody:
    async def emit(self, event: SessionEvent) -> None:
        return None


_NOBODY = _Nobody()


def _iteration_note(limits: Limits) -> str:
    return f"Stopped: reached the limit of {limits.max_iterations} model requests in one turn."


def distinct_tool_ids(
    parts: tuple[Part, ...], used: set[str], new_id: Callable[[str], str]
) -> tuple[Part, ...]:
    """`parts` with every tool call's id unique in the session; `used` (the ids the
    history holds) grows by the ids given out.

    A model may repeat an id (two calls in one reply, or the same `call_0` at every
    step, as some OpenAI-compatible servers do) or send none. Results are paired,
    and calls are shown, by id: two calls sharing one would show as one and get one
    result. So a repeated id becomes `<id>_2` (`_3`, ...) and a missing one a fresh
    id, here, before the reply is journaled: the rewritten id is the call's id from
    then on, for the screen, its result and the history sent back to the model."""
    out: list[Part] = []
    for part in parts:
        if isinstance(part, ToolUsePart):
            unique = part.id or new_id("toolu")
            n = 1
            while unique in used:
                n += 1
                unique = f"{part.id}_{n}"
            used.add(unique)
            part = part if unique == part.id else ToolUsePart(unique, part.name, part.input)
        out.append(part)
    return tuple(out)


def exec_message(command: str, output: str) -> str:
    """How a typed command and its output read in the history."""
    return f"I ran a command myself:\n$ {command}\n\n{output}"


def prompt_parts(prompt: Prompt) -> tuple[Part, ...]:
    """The person's content blocks as model parts. Resources become text the model can
    read, with their URI, because no provider takes an editor's resource as such."""
    parts: list[Part] = []
    for block in prompt.blocks:
        match block:
            case TextBlock(text):
                parts.append(TextPart(text))
            case ImageBlock(data, mime_type, _):
                parts.append(ImagePart(mime_type, data))
            case ResourceLinkBlock(uri, name, _):
                parts.append(TextPart(f"[Referenced: {name} <{uri}>]"))
            case EmbeddedResourceBlock(uri, text, _):
                parts.append(TextPart(f'<resource uri="{uri}">\n{text}\n</resource>'))
    return tuple(parts) or (TextPart(""),)
