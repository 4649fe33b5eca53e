"""The native runtime: loopd's own engine behind the runtime contract.

It owns one `Engine` per session. The history comes from the store (reconciled, so a
session killed mid-turn resumes consistent) and every message is journaled back as
the engine appends it. Config options: `mode` (what may run without asking),
`model` and `thought_level`. Cancellation cancels the task running the turn; the
engine turns that into a `cancelled` outcome with every tool call paired.

A prompt whose text starts with `!` is a command the person typed: it runs through
`Engine.exec` (the bash tool, the policy, the sandbox), not through the model.

The model's context lives with the session in the store: the system prompt frozen
when the session started (reused byte for byte across option changes, `/clear`,
`/compact` and reloads), the instruction files as the model last saw them, and the
compacted view (where it starts, and the summary before it). The windows learned
from overflow errors are kept per runtime and model. Before each prompt the session
checks what changed outside the conversation (instruction files, files the agent
read) and hands it to the engine as reminders.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, cast

from loopd.context.compaction import Rejected
from loopd.context.instructions import guide
from loopd.context.instructions import reminders as instruction_reminders
from loopd.engine.loop import Engine, EngineConfig, EnginePorts
from loopd.engine.ports import Spending
from loopd.engine.steer import SteerBox
from loopd.protocol.errors import ConfigError
from loopd.protocol.events import (
    AgentMessageChunk,
    Command,
    ConfigChoice,
    ConfigOption,
    ModeChanged,
    Prompt,
    TextBlock,
)
from loopd.protocol.messages import Message
from loopd.protocol.model import ThinkingLevel
from loopd.protocol.turns import Outcome, UndoReport, compacted_note
from loopd.protocol.wire.shapes import Mention
from loopd.runtimes.base import RuntimeContext
from loopd.runtimes.native.held import HeldDone, HeldTools, Hold
from loopd.runtimes.native.store import StoreJournal, StoreWindows
from loopd.runtimes.native.wiring import NativeWiring, SessionParts
from loopd.runtimes.options import MODES, check_mode, mode_option, model_option
from loopd.runtimes.pending import WAITS, PendingOptions
from loopd.store.reconcile import reconcile_messages
from loopd.store.sqlite import ContextRecord, SqliteStore

THOUGHT_LEVELS: tuple[ThinkingLevel, ...] = ("off", "low", "medium", "high")


class NativeRuntimeFactory:
    history_in_store: Literal[True] = True  # a fork is a copy of the store

    def __init__(self, name: str, wiring: NativeWiring, store: SqliteStore) -> None:
        self.name = name
        self.wiring = wiring
        self.store = store

    async def open(self, context: RuntimeContext) -> NativeRuntime:
        sid = context.session_id
        history = reconcile_messages(self.store.messages(sid))
        mode = _pick(context.config.get("mode"), MODES, self.wiring.default_mode)
        remembered = context.state.get("approvals", {})
        wiring = self.wiring
        if wiring.listing is not None:  # not on `initialize`: a session is opening
            wiring = wiring.with_models(await wiring.listing.models())
        parts = await wiring.parts_for(context, mode, remembered)
        record = self.store.context(sid)
        if record.system is None:  # a new session: freeze its prompt now
            chain = await asyncio.to_thread(wiring.chain_for, context.cwd)
            system = wiring.system_for(context, chain)
            record = replace(record, system=system, instructions=chain)
            self.store.save_context(sid, system=record.system, instructions=chain)
        journal = StoreJournal(self.store, sid)
        windows = StoreWindows(self.store, self.name)
        return NativeRuntime(context, wiring, journal, windows, history, parts, record)


class NativeRuntime:
    def __init__(
        self,
        context: RuntimeContext,
        wiring: NativeWiring,
        journal: StoreJournal,
        windows: StoreWindows,
        history: Sequence[Message],
        parts: SessionParts,
        record: ContextRecord,
    ) -> None:
        self.context = context
        self.wiring = wiring
        self.journal = journal
        self.windows = windows
        self.system = record.system or ""
        self.told = dict(record.instructions)
        self.guided: dict[str, str] = {}  # the folders' instruction files given so far
        self.values = {
            "mode": _pick(context.config.get("mode"), MODES, wiring.default_mode),
            "model": _pick_model(context.config.get("model"), wiring),
            "thought_level": _pick(context.config.get("thought_level"), THOUGHT_LEVELS, "off"),
        }
        self.parts = parts
        self.steering = SteerBox()
        self._hold: Hold | None = None
        self.engine = Engine(
            context.session_id,
            self._engine_config(),
            self._ports(),
            history,
            record.start,
            record.summary,
            _spending(record, context.state),
        )
        self._turn: asyncio.Task[Any] | None = None
        self.pending = PendingOptions()

    def _engine_config(self) -> EngineConfig:
        thinking = cast(ThinkingLevel, self.values["thought_level"])
        model = self.wiring.target_for(self.values["model"], thinking)
        return replace(self.wiring.engine, model=model, thinking=thinking, system=self.system)

    def _ports(self) -> EnginePorts:
        ctx = self.context
        return EnginePorts(
            provider=self.wiring.provider_for(self.values["model"]),
            tools=HeldTools(self.parts.tools, self._held),
            emitter=ctx.emitter,
            approver=ctx.approver,
            policy=self.parts.policy,
            journal=self.journal,
            clock=self.wiring.clock,
            windows=self.windows,
            context=self.journal,
            done=None if self.parts.done is None else HeldDone(self.parts.done, self._held),
            steer=self.steering,
            mentions=self.parts,
            guides=self,
        )

    async def prompt(self, prompt: Prompt) -> Outcome:
        command = typed_command(prompt)
        await self.parts.begin_turn()
        if command is None:
            work = self.engine.run(prompt, await self._reminders())
        else:
            work = self.engine.exec(command)
        turn = asyncio.create_task(work)
        self._turn = turn
        try:
            return await turn
        finally:
            await self._at_boundary()

    def hold_effects(self, hold: Hold | None) -> None:
        """Until `hold` returns, no tool or done check of the turn runs (the prompt's
        checkpoint is being taken); None: nothing is held."""
        self._hold = hold

    async def _held(self) -> None:
        if self._hold is not None:
            await self._hold()

    async def _reminders(self) -> list[str]:
        """What changed outside the conversation since the model was last told:
        instruction files of the chain, and files it read."""
        cwd = self.context.cwd
        now = await asyncio.to_thread(self.wiring.chain_for, cwd)
        told = instruction_reminders(self.told, now, cwd)
        if told:
            self.told = now
            self.journal.store.save_context(self.context.session_id, instructions=now)
        return [*told, *await self.parts.changed_files()]

    async def entered(self, paths: Sequence[str]) -> list[str]:
        """The instructions of the folders below the cwd a turn works in (the port
        `Guides`), each file given once in this process: a reloaded session may be
        given one again, beside the copy its history holds, which costs tokens and
        misleads nobody."""
        cwd = self.context.cwd
        found = await asyncio.to_thread(self.wiring.guides_for, cwd, paths)
        new = {path: text for path, text in found.items() if path not in self.guided}
        self.guided.update(new)
        return [guide(path, text, cwd) for path, text in new.items()]

    def prompt_commands(self) -> tuple[Command, ...]:
        return self.parts.prompt_commands()

    async def expand(self, name: str, text: str) -> Prompt:
        return await self.parts.expand(name, text)

    def mentions(self) -> tuple[Mention, ...]:
        return self.parts.mentions()

    def steer(self, text: str) -> bool:
        """What the person says while a turn runs: read at the turn's next step (a
        streaming reply is interrupted for it). False when no turn runs."""
        return self.steering.push(text)

    async def cancel(self) -> None:
        if self._turn is not None:
            self._turn.cancel()

    async def undo(self) -> UndoReport:
        """The person's undo of the last turn's file edits. The model is told, in the
        history, what was put back: otherwise it would answer about files that are
        no longer what it last saw."""
        report = await self.parts.undo()
        if report.restored:
            undone = ", ".join(report.restored)
            await self.engine.note(f"The user undid your last changes to: {undone}")
        return report

    async def set_config(self, option_id: str, value: str) -> None:
        """Raises ConfigError for a value the option does not offer. While a turn
        (or `/compact`) runs, the change waits for its end (`loopd.runtimes.pending`),
        and the person is told so."""
        checked = self._checked(option_id, value)
        if self._turn is None:
            await self._apply(option_id, checked)
            return
        self.pending.hold(option_id, checked)
        note = f"{option_id.replace('_', ' ')} {checked}: {WAITS}"
        message_id = self.engine.ports.new_id("msg")
        await self.context.emitter.emit(AgentMessageChunk(f"\n\n[{note}]\n", message_id, "note"))

    async def _apply(self, option_id: str, checked: str) -> None:
        self.values[option_id] = checked
        if option_id == "mode":  # the canonical id: an alias is not in the mode list
            self.parts.set_mode(checked)
            await self.context.emitter.emit(ModeChanged(checked))
        self.engine.reconfigure(self._engine_config(), self._ports())

    async def _at_boundary(self) -> None:
        """The turn ended: what was chosen while it ran applies now."""
        self._turn = None
        for option_id, checked in self.pending.take():
            await self._apply(option_id, checked)

    def _checked(self, option_id: str, value: str) -> str:
        match option_id:
            case "mode":
                return check_mode(value)
            case "model" if value.strip():
                return self._model_id(value)
            case "thought_level" if value in THOUGHT_LEVELS:
                return value
            case "model" | "thought_level":
                raise ConfigError(f"{value!r} is not offered for {option_id}")
        raise ConfigError(f"the native runtime has no option {option_id!r}")

    def _model_id(self, value: str) -> str:
        model = self.wiring.resolve_model(value)
        if model in self.wiring.models or self.wiring.open_models:
            return model
        raise ConfigError(f"{value!r} is not offered for model")

    def config_options(self) -> tuple[ConfigOption, ...]:
        model = self.values["model"]
        models = (model_option(model, self.wiring.models),) if model else ()
        return self.pending.shown((
            mode_option(self.values["mode"], self.parts.containment),
            *models,
            ConfigOption(
                "thought_level",
                "Thinking",
                "thought_level",
                self.values["thought_level"],
                tuple(ConfigChoice(t, t.capitalize()) for t in THOUGHT_LEVELS),
            ),
        ))  # fmt: skip

    async def clear_context(self) -> None:
        """`/clear`: the next turn starts from no history. The stored messages go too,
        so a restart does not bring them back; mode, model and approvals stay."""
        self._replace_history(())

    async def compact_context(self) -> str | None:
        """`/compact`: the model's view becomes one summary of it, by the mechanism the
        automatic compaction uses; the transcript stays whole. Returns the note to
        show, None when `cancel` stopped it; a provider failure raises and leaves the
        view as it was."""
        task = asyncio.create_task(self.engine.compact())
        self._turn = task
        try:
            result = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # our caller gave up, not `cancel`
            return None
        finally:
            await self._at_boundary()
        if isinstance(result, Rejected):
            return compacted_note("", result.reason)
        return compacted_note(result.summary)

    def writes(self) -> int:
        return self.parts.writes()

    def put_back(self, paths: Sequence[str]) -> None:
        self.parts.put_back(paths)

    async def reload_context(self) -> None:
        """A restore put the store's model context back (`loopd.sessions.rewind`): the
        engine starts again from it, exactly as it was then; what the session has spent
        stays (a rewound context is not a fresh budget)."""
        sid, store = self.context.session_id, self.journal.store
        history = reconcile_messages(store.messages(sid))
        record = store.context(sid)
        self.told = dict(record.instructions)
        self.parts.forget_reads()
        config, ports, spent = self._engine_config(), self._ports(), self.engine.spending
        self.engine = Engine(sid, config, ports, history, record.start, record.summary, spent)

    def _replace_history(self, history: Sequence[Message]) -> None:
        session_id = self.context.session_id
        self.journal.store.clear_messages(session_id)
        self.journal.store.save_context(session_id, start=0, summary="")
        for message in history:
            self.journal.store.append_message(session_id, message)
        spending = self.engine.spending  # a fresh context is not a fresh budget
        self.engine = Engine(
            session_id, self._engine_config(), self._ports(), history, spending=spending
        )

    def state(self) -> Mapping[str, Any]:
        """Kept with the session: the person's "always" answers, and what the session
        has cost so far (the `usage_update` cost is the session's running total)."""
        return {"approvals": dict(self.parts.remembered()), "cost": self.engine.keeper.cost}

    async def close(self) -> None:
        await self.cancel()
        await self.parts.aclose()


def typed_command(prompt: Prompt) -> str | None:
    """The command in a `!cmd` prompt (one text block starting with `!` and naming a
    command), or None for a prompt meant for the model."""
    match prompt.blocks:
        case (TextBlock(text),) if text.lstrip().startswith("!"):
            return text.lstrip()[1:].strip() or None
        case _:
            return None


def _spending(record: ContextRecord, state: Mapping[str, Any]) -> Spending:
    """What the session has spent: as kept at its last step, or, for a session no
    step of this version kept, the cost saved with its state."""
    if record.spending is not None:
        return Spending.from_json(record.spending)
    cost = state.get("cost")
    return Spending(cost=float(cost) if isinstance(cost, int | float) else 0.0)


def _pick_model(value: str | None, wiring: NativeWiring) -> str:
    """The stored model (its alias resolved), or the default when it is no longer
    offered."""
    try:
        model = wiring.resolve_model(value) if value else None
    except ConfigError:
        model = None
    if model and wiring.open_models:
        return model
    return _pick(model, wiring.models, wiring.default_model)


def _pick(value: str | None, allowed: Sequence[str], default: str) -> str:
    return value if value is not None and value in allowed else default
