"""A live session's options: the runtime that runs it, and the runtime's own
(mode, model, effort...), as a client sees and sets them.

Choosing the runtime a session has changes nothing. Another one starts with its own
model and effort defaults (the old ones mean nothing to it) and the conversation so
far, handed over as a transcript with the next prompt (`loopd.sessions.transcript`);
the mode and the session's "always" answers are loopd's and stay. Every change is
recorded with the catalog identity it resolves to, and shown on every editor
attached to the session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from loopd.protocol.errors import ConfigError
from loopd.protocol.events import (
    AvailableCommandsUpdated,
    Command,
    ConfigChoice,
    ConfigOption,
    ConfigOptionsChanged,
)
from loopd.protocol.events_wire import to_wire
from loopd.runtimes.base import RuntimeContext, RuntimeFactory
from loopd.runtimes.options import check_mode
from loopd.sessions.commands import commands_for
from loopd.sessions.errors import SessionBusy
from loopd.sessions.live import LiveSession, SessionEmitter
from loopd.sessions.rewind import REWIND
from loopd.sessions.transcript import HANDOVER, transcript
from loopd.store.sqlite import SqliteStore

RUNTIME_OPTION = "runtime"
MODE_OPTION = "mode"
APPROVALS = "approvals"  # the runtime-state key of the session's "always" answers


@dataclass(frozen=True, slots=True)
class SessionView:
    """What a client is told about a session it opened."""

    id: str
    config_options: tuple[ConfigOption, ...]
    commands: tuple[Command, ...] = ()


@dataclass(frozen=True, slots=True)
class Options:
    """What setting options needs of the manager: its runtimes (`names`, the
    `default`, `factory` raising for one it cannot run), the identity a choice resolves to, a new
    runtime's context and the session's emitter. `owner` is the manager, recorded
    on a session whose runtime its runtimes made."""

    store: SqliteStore
    now: Callable[[], str]
    names: Sequence[str]
    default: str  # the runtime of a stored session that names none
    factory: Callable[[str], RuntimeFactory]
    identity: Callable[[str, Mapping[str, str]], dict[str, Any]]
    context: Callable[[LiveSession], RuntimeContext]
    emitter: Callable[[LiveSession], SessionEmitter]
    owner: object

    async def set(self, live: LiveSession, option_id: str, value: str) -> SessionView:
        if option_id == RUNTIME_OPTION:
            await self._switch(live, value)
        else:
            if option_id not in {o.id for o in live.runtime.config_options()}:
                raise ConfigError(f"unknown config option {option_id!r}")
            if option_id == MODE_OPTION:  # `accept-edits` is `accept_edits` from here on
                value = check_mode(value)
            await live.runtime.set_config(option_id, value)  # validates the value
        config = {o.id: o.current_value for o in live.runtime.config_options()}
        identity = self.identity(str(live.record.runtime.get("name")), config)
        live.record = replace(live.record, config=config, runtime=identity)
        self.store.update(live.id, config=config, runtime=identity, updated_at=self.now())
        view = self.view(live)
        await self.emitter(live).show(to_wire(ConfigOptionsChanged(view.config_options)))
        return view

    async def _switch(self, live: LiveSession, name: str) -> None:
        """Another runtime for `live` (see the module doc)."""
        if name == live.record.runtime.get("name"):
            return
        factory = self.factory(name)
        if live.turn is not None:
            raise SessionBusy("cannot switch runtimes while a turn runs")
        await live.runtime.close()
        config = {k: v for k, v in live.record.config.items() if k == MODE_OPTION}
        identity = self.identity(name, config)
        handed = transcript(self.store.events(live.id))
        self.store.clear_messages(live.id)  # the native engine's own context, if any
        state = carried(live.record.runtime_state) | ({HANDOVER: handed} if handed else {})
        live.record = replace(live.record, runtime=identity, runtime_state=state, config=config)
        self.store.update(live.id, runtime=identity, runtime_state=state, config=config)
        live.runtime = await factory.open(self.context(live))
        live.owner = self.owner
        commands = offered(live)
        await self.emitter(live).show(to_wire(AvailableCommandsUpdated(commands)))

    def view(self, live: LiveSession) -> SessionView:
        """The session's options now: its runtime's, then the runtime itself."""
        runtime_option = ConfigOption(
            RUNTIME_OPTION,
            "Runtime",
            "_runtime",
            str(live.record.runtime.get("name", self.default)),
            tuple(ConfigChoice(n, n) for n in sorted(self.names)),
            "Who runs this session's turns",
        )
        options = (*live.runtime.config_options(), runtime_option)
        return SessionView(live.id, options, offered(live))


def offered(live: LiveSession) -> tuple[Command, ...]:
    """The session commands `live` offers: its runtime's, and `/rewind`."""
    return commands_for(live.runtime) + ((REWIND,) if live.rewinds else ())


def carried(state: Mapping[str, Any]) -> dict[str, Any]:
    """What outlives a runtime: the session's "always" answers (loopd's rules)."""
    return {APPROVALS: state[APPROVALS]} if APPROVALS in state else {}
