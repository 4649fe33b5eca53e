"""Keeping a session inside its model's window: occupancy, the budget notice,
automatic compaction, and the recovery from an overflow.

`ContextKeeper` owns the model's view of the history (`loopd.context.view`). Before
each request it compacts when the policy says so; after each reply it calibrates
the estimate against the provider's count; on an overflow it learns the window the
endpoint named, keeps it (through the `WindowBook` port, so the next session knows
it), compacts and lets the engine retry the same step. It gives up only when the
compaction cannot make room, and then says why.

The summary is written by the model, in requests that must themselves fit: the part
to summarise is rendered as text and cut into pieces (`loopd.context.compaction`),
each folded into the summary so far.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from loopd.context.compaction import (
    BP,
    CompactionPolicy,
    Cut,
    Rejected,
    occupancy_bp,
    pieces,
    plan_cut,
    transcript,
)
from loopd.context.tokens import estimate_text, estimate_tools
from loopd.context.view import ContextView
from loopd.context.window import (
    MIN_LEARNED,
    cost_usd,
    effective_window,
    learn_window,
    parse_overflow,
)
from loopd.engine.ports import ContextJournal, Spending, WindowBook
from loopd.protocol.errors import ContextOverflow, ProviderError
from loopd.protocol.messages import TextPart, user_text
from loopd.protocol.model import ModelRequest, ResponseDone, ToolSpec, Usage
from loopd.protocol.turns import StopReason

SUMMARISER = (
    "You maintain the running summary of a coding session between a person and an AI "
    "coding agent, so the agent can continue the work from the summary alone. Keep: "
    "the task and the person's requests and preferences, decisions made, files read "
    "or changed and how, commands run and what they showed, errors met, and what is "
    "left to do. Be specific (paths, names, values) and brief. Reply with the updated "
    "summary only."
)
MAX_OVERFLOW_RETRIES = 3

Ask = Callable[[ModelRequest], Awaitable[ResponseDone]]
"""One model request, answered whole."""
Send = Callable[[ModelRequest], Awaitable[ResponseDone | None]]
"""One step's model request, shown as it streams; None when it was interrupted."""


@dataclass(frozen=True, slots=True)
class Compacted:
    """A compaction that happened: how many messages it folded into the summary."""

    summarised: int
    summary: str
    before: int
    after: int

    @property
    def note(self) -> str:
        return (
            f"[Context compacted: {self.summarised} earlier messages were summarised "
            f"(about {self.before:,} → {self.after:,} tokens). The full conversation "
            "stays in this session.]"
        )


@dataclass(frozen=True, slots=True)
class Failed:
    """A step that got no reply: how the turn ends, and what the person reads."""

    stop: StopReason
    message: str


Say = Callable[[str], Awaitable[None]]
"""A short note for the person."""


NOTICE = "Context budget:"


def told_budget(view: ContextView) -> bool:
    """Whether the model's view already holds the budget notice (journaled with the
    results it came with): a reloaded session is not told again."""
    return any(m.role == "user" and NOTICE in m.text for m in view.history[view.start :])


@dataclass(slots=True)
class ContextKeeper:
    view: ContextView
    policy: CompactionPolicy
    windows: WindowBook
    journal: ContextJournal
    fallback_window: int
    configured: Mapping[str, int] = field(default_factory=dict)
    cost: float = 0.0
    armed: bool = True
    noticed: bool = False
    overflows: int = 0
    last_estimate: int = 0
    _fixed: dict[tuple[str, tuple[str, ...]], int] = field(default_factory=dict)

    def window(self, model: str) -> int:
        learned, configured = self.windows.learned(model), self.configured.get(model)
        return effective_window(model, learned, self.fallback_window, configured)

    def fixed(self, system: str, tools: tuple[ToolSpec, ...]) -> int:
        """The estimate of what every request carries besides its messages."""
        key = (system, tuple(t.name for t in tools))
        if key not in self._fixed:
            self._fixed = {key: estimate_text(system) + estimate_tools(tools)}
        return self._fixed[key]

    def projected(self, request: ModelRequest) -> int:
        """The calibrated size of `request`'s prompt."""
        return self.view.scaled(self.view.estimate + self.fixed(request.system, request.tools))

    def reserve(self, model: str, max_tokens: int) -> int:
        """The output to ask `model` for (see `CompactionPolicy.reserve`)."""
        return self.policy.reserve(self.window(model), max_tokens)

    def occupancy(self, request: ModelRequest) -> int:
        """How much of the window `request` takes as sent: its prompt (the system
        prompt, the tools, the history up to the reply just received) and the output
        it reserves, which its answer may fill and the next request then carries."""
        sent = self.projected(request) + request.max_tokens
        return occupancy_bp(sent, self.window(request.model))

    def due(self, request: ModelRequest) -> bool:
        """Whether the policy wants a compaction before sending `request`: at
        `compact_at`, and whenever it would not fit the window at all (armed or not:
        a compaction that left the context above `rearm_below` must not let the next
        requests grow into an overflow)."""
        occupancy = self.occupancy(request)
        if occupancy < self.policy.rearm_below:
            self.armed = True
        window = self.window(request.model)
        over = self.projected(request) + request.max_tokens > self.policy.input_limit(window)
        due = over or (self.armed and occupancy >= self.policy.compact_at)
        return self.policy.automatic and due

    def notice(self, request: ModelRequest) -> str | None:
        """The one budget notice, when occupancy first reaches `notice_at`."""
        at, occupancy = self.policy.notice_at, self.occupancy(request)
        if not at or self.noticed or occupancy < at or self.due(request):
            return None  # a compaction that is due says more than a notice would
        self.noticed = True
        window = self.window(request.model)
        return (
            f"{NOTICE} about {occupancy * 100 // BP}% of the "
            f"{window:,}-token window is in use. At {self.policy.compact_at * 100 // BP}% "
            "the older part of the conversation is summarised: keep what you still need "
            "in the plan or in files, and keep tool output small."
        )

    def sending(self, request: ModelRequest) -> None:
        """`request` is about to go out: remember its estimate, which the reply's
        count calibrates (the view grows by the reply before that happens)."""
        self.last_estimate = self.view.estimate + self.fixed(request.system, request.tools)

    def replied(
        self, request: ModelRequest, usage: Usage
    ) -> tuple[int, float | None, float | None]:
        """After a reply: calibrate, charge its cost. Returns the tokens in use, the
        session's cost so far and this request's (the costs None when unknown)."""
        self.overflows = 0
        self.view.calibrate(self.last_estimate, usage.context_tokens)
        spent = self.charge(request.model, usage)
        used = usage.context_tokens + usage.output_tokens
        return used, self.cost if spent is not None or self.cost else None, spent

    def charge(self, model: str, usage: Usage) -> float | None:
        """Add one request's cost to the session's (a step's, a summary's); returns
        it, None when the model's price is not known."""
        spent = cost_usd(
            model,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
        )
        if spent is not None:
            self.cost += spent
        return spent

    def add_cost(self, usd: float | None) -> None:
        """Add a cost already priced elsewhere (a child turn's) to the session's."""
        if usd is not None:
            self.cost += usd

    def overflowed(self, request: ModelRequest, err: ContextOverflow) -> bool:
        """Learn from an overflow: the window it names, and how far off the estimate
        was when it names the prompt's real size too. True when it named the window
        (so the request can be judged against it again)."""
        self.overflows += 1
        overflow = parse_overflow(err.message)
        sent = self.projected(request)
        window = self.window(request.model)
        learned = learn_window(overflow, window, sent)
        if overflow.prompt:
            self.view.calibrate(self.last_estimate, overflow.prompt)
        elif learned >= window:  # no figure and no progress: shrink
            learned = max(MIN_LEARNED, int(window * 0.9))
        self.windows.learn(request.model, learned)
        self.armed = True
        return overflow.limit is not None

    async def reply(
        self, build: Callable[[], ModelRequest], send: Send, ask: Ask, say: Say
    ) -> tuple[ModelRequest, ResponseDone] | Failed | None:
        """One step's reply: compacting first when the policy says so, and on an
        overflow learning the window, compacting when the step would not fit it (a
        step refused only for the output it asked for fits once that is reserved
        within the window) and retrying the same step. Fails only when compaction
        cannot make room, or for a provider failure that is no overflow; None when
        `send` was interrupted (the person steered)."""
        while True:
            request = build()
            if self.due(request):
                await self._compact_telling(ask, request, say, forced=False)
                request = build()
            self.sending(request)
            try:
                done = await send(request)
            except ContextOverflow as err:
                if self.overflows >= MAX_OVERFLOW_RETRIES:
                    reason = "it still overflows after compacting"
                    return Failed("max_tokens", _overflow_note(reason, err))
                named = self.overflowed(request, err)
                again = build()  # its output reserved within the window now known
                if named and again.max_tokens < request.max_tokens and not self.due(again):
                    continue  # refused for the output it asked for: it fits now
                failure = await self._compact_telling(ask, again, say, forced=True)
                if failure is not None:
                    return Failed("max_tokens", _overflow_note(failure, err))
            except ProviderError as err:
                return Failed("end_turn", f"The model request failed: {err.message}")
            else:
                return None if done is None else (request, done)

    async def _compact_telling(
        self, ask: Ask, request: ModelRequest, say: Say, forced: bool
    ) -> str | None:
        """Compact and tell the person. Returns why it failed, or None. A failed
        automatic compaction is only shown: the request may still fit."""
        try:
            result = await self.compact(ask, request)
        except ProviderError as err:
            result = Rejected(f"the summary could not be made ({err.message})")
        if isinstance(result, Rejected):
            self.armed = False
            if not forced:
                await say(f"[Context not compacted: {result.reason}.]")
            return result.reason
        await say(result.note)
        return None

    async def compact(
        self,
        ask: Ask,
        request: ModelRequest,
        keep_segments: int | None = None,
    ) -> Compacted | Rejected:
        """Fold the older part of the view into the summary; `ask` makes one model
        request (retried like any other, shown to nobody). A provider failure raises;
        the view is then as it was."""
        window = self.window(request.model)
        # What every request carries besides its messages, and the output it reserves:
        # the view after the cut must leave room for both.
        fixed = self.view.scaled(self.fixed(request.system, request.tools)) + request.max_tokens
        plan = plan_cut(self.view, self.policy, window, fixed, keep_segments)
        if isinstance(plan, Rejected):
            return plan
        before = self.projected(request)
        summary = await self._summarise(ask, request.model, window, plan)
        start = self.view.start
        self.view.compact(plan.index, summary)
        self.journal.compacted(plan.index, summary)
        self.armed, self.noticed = False, False
        return Compacted(plan.index - start, summary, before, self.projected(request))

    async def _summarise(self, ask: Ask, model: str, window: int, cut: Cut) -> str:
        budget = self.policy.summary_budget(window)
        overhead = estimate_text(SUMMARISER) + 2 * budget + 64
        room = self.policy.input_limit(window) - overhead
        room = int(room / max(1.0, self.view.scale))
        if room < 64:
            raise ContextOverflow(f"a {window}-token window leaves no room to summarise")
        summary = self.view.summary
        history = self.view.history[self.view.start : cut.index]
        for piece in pieces(transcript(history), room):
            summary = await _fold(ask, model, summary, piece, budget)
        return summary


async def _fold(ask: Ask, model: str, summary: str, piece: str, budget: int) -> str:
    so_far = f"The summary so far:\n{summary}\n\n" if summary else ""
    words = (
        f"{so_far}The next part of the conversation:\n\n{piece}\n\n"
        f"Write the updated summary, in at most {budget * 3 // 4} words."
    )
    request = ModelRequest(
        model=model, system=SUMMARISER, messages=(user_text(words),), max_tokens=budget
    )
    done = await ask(request)
    text = "".join(p.text for p in done.parts if isinstance(p, TextPart)).strip()
    if not text:
        raise ProviderError("the model gave no summary")
    return text


def _overflow_note(reason: str, err: ContextOverflow) -> str:
    return (
        "Stopped: the conversation no longer fits the model's context window "
        f"({err.message}), and compacting it could not make room: {reason}. Use /clear "
        "to start a fresh context, or switch to a model with a larger window."
    )


@dataclass(slots=True)
class MemoryWindows:
    """Learned windows kept for the life of the process only."""

    learned_by_model: dict[str, int] = field(default_factory=dict)

    def learned(self, model: str) -> int | None:
        return self.learned_by_model.get(model)

    def learn(self, model: str, window: int) -> None:
        self.learned_by_model[model] = window


class NoContextJournal:
    """Compactions and spending kept in memory only."""

    def compacted(self, start: int, summary: str) -> None:
        return None

    def spent(self, spending: Spending) -> None:
        return None
