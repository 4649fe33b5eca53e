"""SessionManager: the one place sessions are opened, prompted, cancelled and closed.

Both protocol adapters (ACP and LSP) and the CLI are thin clients of this class, so a
session behaves the same in every editor, and a session created from one is listed
and loadable from the others (they share the SQLite store).

Turn discipline: one turn at a time per session (see `loopd.sessions.turns`);
`cancel` ends the running turn and every queued prompt of the session with
`cancelled`. `steer` hands text to the running turn, read at its next step.

Single writer: a session is live in one loopd process at a time. Opening it takes
its lease in the store (`loopd.store.lease`), each turn confirms it, closing drops
it; a process that finds it held by another live one is refused with `SessionHeld`.
Within one process the live sessions are a `SessionTable`, which the daemon shares
between its editor connections (a manager each, with that editor's runtimes).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from loopd.checkpoints.service import Checkpoints
from loopd.config.trust.prompt import WorkspaceTrust
from loopd.mcp.config import McpServerConfig
from loopd.protocol.errors import ConfigError, RuntimeFailure
from loopd.protocol.events import (
    AgentMessageChunk,
    Prompt,
)
from loopd.protocol.turns import Outcome, UndoReport
from loopd.protocol.wire.shapes import Mention
from loopd.runtimes.base import ForkableFactory, RuntimeContext, RuntimeFactory
from loopd.sessions.commands import (
    FileUndoing,
    mentions_of,
)
from loopd.sessions.errors import NoRuntime, SessionBusy, SessionHeld, SessionNotFound
from loopd.sessions.live import (
    ClientLink,
    LiveSession,
    SessionEmitter,
    Unopened,
)
from loopd.sessions.offer import Credentials, RuntimeOffer
from loopd.sessions.options import RUNTIME_OPTION, Options, SessionView, carried
from loopd.sessions.queue import say_entry_changed, steer_turn
from loopd.sessions.resume import say_cut, was_cut
from loopd.sessions.rewind import Rewinds
from loopd.sessions.rewinding import Rewinding
from loopd.sessions.table import SessionTable
from loopd.sessions.turns import MAX_QUEUED, Turns
from loopd.store.lease import Leases
from loopd.store.reconcile import reconcile_events
from loopd.store.sqlite import SessionPage, SessionRecord, SqliteStore

__all__ = [  # the refusals and the queue bound live beside the turns; frontends look here
    "MAX_QUEUED", "Credentials", "NoRuntime", "SessionBusy", "SessionHeld", "SessionManager",
    "SessionNotFound", "SessionView",
]  # fmt: skip

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SessionManager(Rewinding, RuntimeOffer):
    store: SqliteStore
    runtimes: Mapping[str, RuntimeFactory]
    default_runtime: str
    now: Callable[[], str]
    approval_timeout: float = 600.0
    no_runtime_help: str = "configure a runtime (see `loopd doctor`)"
    no_default_help: str = "no default runtime: choose one (see `loopd catalog`)"
    identify: Callable[[str, Mapping[str, str]], Mapping[str, Any]] = field(
        default=lambda name, config: {}
    )
    """What a session records about who runs it (the catalog's runtime identity:
    harness, model, effort, catalog digest), kept with the session and shown on load."""
    new_id: Callable[[], str] = field(default=lambda: f"sess_{uuid.uuid4().hex}")
    credentials: Credentials | None = None
    workspace: WorkspaceTrust | None = None
    """Asks about (or tells of) an untrusted workspace config at each session's first
    turn; None says nothing."""
    lease_clock: Callable[[], float] = time.time
    """Wall time in seconds, for the leases' expiry (shared by every process)."""
    table: SessionTable | None = None
    """The live sessions, shared with the process's other managers (the daemon's,
    one per editor connection); None: this manager's own."""
    checkpoints: Checkpoints | None = None
    """Where each prompt's checkpoint is kept (`loopd.sessions.rewind`); None: none."""
    _live: dict[str, LiveSession] = field(init=False)
    _leases: Leases = field(init=False)

    def __post_init__(self) -> None:
        if self.table is None:
            self.table = SessionTable(self.store, Leases(self.store, clock=self.lease_clock))
        self._live, self._leases = self.table.live, self.table.leases

    # -- lifecycle ---------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        link: ClientLink,
        additional_dirs: Sequence[str] = (),
        mcp_servers: Sequence[McpServerConfig] = (),
        config: Mapping[str, str] | None = None,
    ) -> SessionView:
        if not self.runtimes:  # a login since the last look counts at once
            await self.refresh_runtimes()
        config = dict(config or {})
        runtime_name = config.pop(RUNTIME_OPTION, self.default_runtime)
        self._factory(runtime_name)
        stamp = self.now()
        record = SessionRecord(
            id=self.new_id(),
            cwd=cwd,
            additional_dirs=tuple(additional_dirs),
            created_at=stamp,
            updated_at=stamp,
            runtime=self._identity(runtime_name, config),
            config=config,
        )
        self.store.create(record)
        try:
            live = await self._open(record, link, mcp_servers)
        except BaseException:
            self.store.delete(record.id)  # a session that never opened is not listed
            raise
        return self._view(live)

    async def load_session(
        self,
        session_id: str,
        link: ClientLink,
        mcp_servers: Sequence[McpServerConfig] = (),
        replay: bool = True,
    ) -> SessionView:
        """Attach `link` to a stored session (opening it here if needed). With
        `replay`, the whole history is shown on `link` before this returns."""
        live = self._live.get(session_id)
        changed: tuple[str, ...] = ()
        opened = live is None
        if live is None:
            record = self.store.get(session_id)
            if record is None:
                raise SessionNotFound(f"no session {session_id!r}")
            record, changed = self._reidentify(record)
            live = await self._open(record, link, mcp_servers)
        else:
            live = await self._ready(session_id)
            if not live.attached(link):
                live.links.append(link)
        if replay:
            for wire in reconcile_events(self.store.events(session_id)):
                await link.send_update(session_id, wire)
        if changed:
            await say_entry_changed(live, link, changed)
        if opened and was_cut(live):  # not a turn running here: a process died in it
            await say_cut(live, link)
        return self._view(live)

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        link: ClientLink,
        additional_dirs: Sequence[str] = (),
        mcp_servers: Sequence[McpServerConfig] = (),
    ) -> SessionView:
        """A new session with `session_id`'s history up to now, on the same runtime,
        opened on `link`. Only a runtime whose history is loopd's store can fork."""
        source = self.store.get(session_id)
        if source is None:
            raise SessionNotFound(f"no session {session_id!r}")
        runtime = str(source.runtime.get("name", self.default_runtime))
        if not isinstance(self._factory(runtime), ForkableFactory):
            raise ConfigError(f"the {runtime} runtime keeps its own history: it cannot fork")
        stamp = self.now()
        title = f"Fork of {source.title}" if source.title else None
        record = replace(
            source, id=self.new_id(), cwd=cwd, additional_dirs=tuple(additional_dirs),
            title=title, created_at=stamp, updated_at=stamp,
        )  # fmt: skip
        self.store.fork(session_id, record)
        try:
            live = await self._open(record, link, mcp_servers)
        except BaseException:
            self.store.delete(record.id)
            raise
        return self._view(live)

    def view(self, session_id: str) -> SessionView:
        """What a client is told about an open session now (its current options)."""
        return self._view(self._require(session_id))

    def list_sessions(self, cwd: str | None = None, cursor: str | None = None) -> SessionPage:
        return self.store.list_sessions(cwd, cursor)

    async def close_session(self, session_id: str, link: ClientLink | None = None) -> None:
        """Detach `link` (or every link); the runtime closes with the last one."""
        live = self._live.get(session_id)
        if live is None:
            if self.store.get(session_id) is None:
                raise SessionNotFound(f"no session {session_id!r}")
            return
        if link is not None and live.attached(link):
            live.links = [other for other in live.links if other is not link]
        if link is None or not live.links:
            await self._shut(live)

    async def delete_session(self, session_id: str) -> None:
        live = self._live.get(session_id)
        if live is not None:
            await self._shut(live)
        elif (holder := self._leases.holder(session_id)) is not None:
            raise SessionHeld(session_id, holder)
        if not self.store.delete(session_id):
            raise SessionNotFound(f"no session {session_id!r}")

    async def detach(self, link: ClientLink) -> None:
        """A connection went away: cancel what it was running, close what only it had."""
        await self.cancel_turns(link)
        for live in list(self._live.values()):
            if live.attached(link):
                await self.close_session(live.id, link)

    async def cancel_turns(self, link: ClientLink) -> None:
        """Cancel the turns `link`'s prompts run (its input ended: nobody will steer,
        answer or see them through); each prompt then answers `cancelled`."""
        for live in list(self._live.values()):
            if live.attached(link) and live.asker is link:
                await self.cancel(live.id)

    async def shutdown(self) -> None:
        for live in list(self._live.values()):
            await self._shut(live)

    def runs_sessions(self) -> bool:
        """Whether a live session's runtime came from this manager's runtimes (its
        providers must stay open while one does)."""
        return any(live.owner is self for live in self._live.values())

    # -- turns -------------------------------------------------------------------------

    async def prompt(
        self,
        session_id: str,
        prompt: Prompt,
        link: ClientLink,
        on_start: Callable[[], None] | None = None,
    ) -> Outcome:
        """Run `prompt` as the session's next turn. `on_start` is called when it
        leaves the queue (at once when nothing runs)."""
        return await self._turns().run(await self._ready(session_id), prompt, link, on_start)

    def mentions(self, session_id: str) -> tuple[Mention, ...]:
        """What the person may @-mention in the session's prompts, as it is now."""
        return mentions_of(self._require(session_id).runtime)

    def busy(self, session_id: str) -> bool:
        """Whether a prompt sent now would wait for the turn slot."""
        return self._require(session_id).lock.locked()

    async def steer(self, session_id: str, text: str) -> None:
        """Hand `text` to the session's running turn (see `loopd.sessions.queue`)."""
        live = self._require(session_id)
        steer_turn(live.runtime, str(live.record.runtime.get("name")), text)

    async def undo(self, session_id: str) -> UndoReport:
        """Put back the last turn's file changes, between turns (waits for one that
        runs). Raises `RuntimeFailure` when the session's runtime cannot undo."""
        live = self._require(session_id)
        runtime = live.runtime
        if not isinstance(runtime, FileUndoing):
            name = live.record.runtime.get("name")
            raise RuntimeFailure(f"the {name} runtime keeps its own file history; it cannot undo")
        async with live.lock:
            report = await runtime.undo()
        await self._emitter(live).emit(
            AgentMessageChunk(report.summary, f"msg_{uuid.uuid4().hex[:12]}")
        )
        return report

    async def cancel(self, session_id: str) -> None:
        live = self._live.get(session_id)
        if live is None:
            return
        live.generation += 1
        await live.runtime.cancel()

    # -- config ------------------------------------------------------------------------

    async def set_config(self, session_id: str, option_id: str, value: str) -> SessionView:
        """Set one of the session's options (see `loopd.sessions.options`)."""
        return await self._options().set(await self._ready(session_id), option_id, value)

    # -- internals -----------------------------------------------------------------------

    async def _open(
        self, record: SessionRecord, link: ClientLink, mcp: Sequence[McpServerConfig]
    ) -> LiveSession:
        factory = self._factory(str(record.runtime.get("name", self.default_runtime)))
        live = LiveSession(
            record, runtime=Unopened(), links=[link], mcp_servers=tuple(mcp), owner=self,
            rewinds=self.checkpoints is not None,
        )  # fmt: skip
        self._hold(record.id)
        self._live[record.id] = live
        try:
            live.runtime = await factory.open(self._context(live))
        except BaseException:
            del self._live[record.id]
            self._leases.release(record.id)
            raise
        finally:
            live.opened.set()
        return live

    def _hold(self, session_id: str) -> None:
        """Take (or renew) this process's lease of `session_id`, or raise `SessionHeld`."""
        holder = self._leases.take(session_id)
        if holder is not None:
            raise SessionHeld(session_id, holder)

    def _context(self, live: LiveSession) -> RuntimeContext:
        return live.runtime_context(self._emitter(live), self.approval_timeout)

    def _emitter(self, live: LiveSession) -> SessionEmitter:
        return self._turns().emitter(live)

    def _turns(self) -> Turns:
        rewinds = None if self.checkpoints is None else Rewinds(self.checkpoints, self.now)
        return Turns(
            self.store, self.now, self.approval_timeout, self.workspace, self._hold,
            self._save_after_turn, rewinds,
        )  # fmt: skip

    def use_runtimes(
        self,
        runtimes: Mapping[str, RuntimeFactory],
        default_runtime: str,
        identify: Callable[[str, Mapping[str, str]], Mapping[str, Any]],
    ) -> None:
        """Offer these runtimes to sessions opened from now on; open sessions keep
        the runtime they have."""
        self.runtimes, self.default_runtime, self.identify = runtimes, default_runtime, identify

    def _require(self, session_id: str) -> LiveSession:
        live = self._live.get(session_id)
        if live is None:
            raise SessionNotFound(f"session {session_id!r} is not open here; load it first")
        return live

    async def _ready(self, session_id: str) -> LiveSession:
        """The open session once its runtime has opened. A prompt, an option or a
        second editor's load that arrives while another request opens the session
        (two editors on one daemon; a bridge that reconnected and loads it again)
        waits for the open rather than reaching no runtime; if that open failed,
        the session is not open here."""
        live = self._require(session_id)
        while not live.opened.is_set():
            await live.opened.wait()
            live = self._require(session_id)
        return live

    def _save_after_turn(self, live: LiveSession) -> None:
        state = carried(live.record.runtime_state) | dict(live.runtime.state())
        live.record = replace(live.record, runtime_state=state, updated_at=self.now())
        self.store.update(live.id, runtime_state=state, updated_at=live.record.updated_at)

    async def _shut(self, live: LiveSession) -> None:
        self._live.pop(live.id, None)
        live.generation += 1
        try:
            await live.runtime.cancel()
            await live.runtime.close()
        except Exception:
            log.exception("runtime of %s failed to close", live.id)
        finally:
            self._leases.release(live.id)

    def _view(self, live: LiveSession) -> SessionView:
        return self._options().view(live)

    def _options(self) -> Options:
        return Options(
            self.store, self.now, tuple(self.runtimes), self.default_runtime, self._factory,
            self._identity, self._context, self._emitter, self,
        )  # fmt: skip
