"""A session while it is open in this process: its runtime, its attached editor
connections, the journal-then-show emitter and the fail-closed approver.

Per-connection state stays per connection: a `ClientLink` is one editor connection
(ACP or LSP) and carries its own way of showing updates and asking questions. A
session can be shown on several links at once; questions go to the link whose
prompt is running, and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from loopd.engine.limits import bound_shown
from loopd.mcp.config import McpServerConfig
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import (
    ConfigOption,
    Prompt,
    SessionEvent,
    SessionInfoUpdated,
    ToolCallStarted,
    ToolCallUpdated,
)
from loopd.protocol.events_wire import to_wire
from loopd.protocol.questions import Question, UserQuestions
from loopd.protocol.turns import Outcome
from loopd.runtimes.base import Runtime, RuntimeContext
from loopd.sessions.errors import SessionBusy
from loopd.store.sqlite import SessionRecord, SqliteStore
from loopd.tools.access import EditorTerminals, FileAccess

log = logging.getLogger(__name__)


class ClientLink(Protocol):
    """One editor connection, as the session layer sees it."""

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None: ...

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision: ...

    def files(self, session_id: str, roots: Sequence[str], local: FileAccess) -> FileAccess:
        """How this editor reads and writes the session's files: its own buffers
        (unsaved edits included) and review UI where it offers them, else `local`."""
        ...


@runtime_checkable
class OffersTerminals(Protocol):
    """A `ClientLink` that may also run shell commands in the editor's terminals.
    Optional: a link without `terminals` has none, like one that returns None."""

    def terminals(self, session_id: str) -> EditorTerminals | None: ...


@runtime_checkable
class AsksQuestions(Protocol):
    """A `ClientLink` that can put the agent's questions to the person. Optional,
    like terminals; `can_ask_user` is False where nobody would see the question."""

    def can_ask_user(self) -> bool: ...

    async def ask_user(self, question: Question) -> str | None: ...


@dataclass(eq=False, slots=True)
class LiveSession:
    record: SessionRecord
    runtime: Runtime
    links: list[ClientLink] = field(default_factory=list)
    asker: ClientLink | None = None  # the link whose prompt is running
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0  # prompts waiting for the turn slot (not the one holding it)
    turn: asyncio.Task[Any] | None = None
    generation: int = 0  # bumped by cancel: queued prompts of an older one give up
    mcp_servers: tuple[McpServerConfig, ...] = ()  # the editor's, for a runtime switch
    greeted: bool = False  # the first turn's workspace-trust step is done
    owner: object = None  # the manager whose runtimes made `runtime` (see SessionTable)
    rewinds: bool = False  # checkpoints are taken: `/rewind` is offered
    opened: asyncio.Event = field(default_factory=asyncio.Event)  # set once `runtime` is real

    @property
    def id(self) -> str:
        return self.record.id

    @contextlib.asynccontextmanager
    async def slot(self, cap: int, on_wait: Callable[[], Awaitable[None]]) -> AsyncIterator[None]:
        """The session's one turn slot, held for a turn; counted in `waiting` until
        taken. Admission is one step with no await in it: the count is checked and
        taken together, so prompts arriving in a burst are counted as they arrive
        and the first past `cap` is refused (`SessionBusy`), however many come at
        once. `on_wait` runs, counted, when the slot is taken (to tell the editor).
        A waiter that is cancelled leaves the queue and nothing else."""
        if self.waiting >= cap:
            raise SessionBusy(f"{cap} prompts are already waiting in this session")
        self.waiting += 1
        try:
            if self.lock.locked():
                await on_wait()
            await self.lock.acquire()
        finally:
            self.waiting -= 1
        try:
            yield
        finally:
            self.lock.release()

    def attached(self, link: ClientLink) -> bool:
        """By identity: two connections are never "equal", whatever they hold."""
        return any(other is link for other in self.links)

    def editor_files(self, local: FileAccess) -> FileAccess:
        """The prompting editor's file access (or `local`), for the runtime's tools."""
        if self.asker is None:
            return local
        roots = (self.record.cwd, *self.record.additional_dirs)
        return self.asker.files(self.id, roots, local)

    def person(self, timeout: float) -> UserQuestions | None:
        """Who answers the agent's questions now: the prompting link, if it can."""
        link = self.asker
        if isinstance(link, AsksQuestions) and link.can_ask_user():
            return BoundedQuestions(link, timeout)
        return None

    def runtime_context(self, emitter: SessionEmitter, timeout: float) -> RuntimeContext:
        """What the session's runtime is opened with: its record, the editors' files,
        terminals and person (whichever editor prompts), approvals bounded by
        `timeout` seconds."""
        record = self.record
        return RuntimeContext(
            session_id=record.id,
            cwd=record.cwd,
            additional_roots=record.additional_dirs,
            emitter=emitter,
            approver=SessionApprover(lambda: self, timeout),
            config=dict(record.config),
            mcp_servers=self.mcp_servers,
            state=dict(record.runtime_state),
            editor_files=self.editor_files,
            editor_terminals=self.editor_terminals,
            person=functools.partial(self.person, timeout),
        )

    def editor_terminals(self) -> EditorTerminals | None:
        link = self.asker
        return link.terminals(self.id) if isinstance(link, OffersTerminals) else None


class Unopened:
    """A live session's runtime while the real one opens (events emitted during the
    open already find the session); it is never prompted: requests that arrive
    meanwhile wait for `LiveSession.opened` (`SessionManager._ready`)."""

    async def prompt(self, prompt: Prompt) -> Outcome:
        raise RuntimeError("runtime not opened")

    async def cancel(self) -> None:
        return None

    async def set_config(self, option_id: str, value: str) -> None:
        raise RuntimeError("runtime not opened")

    def config_options(self) -> tuple[ConfigOption, ...]:
        return ()

    def state(self) -> Mapping[str, Any]:
        return {}

    async def close(self) -> None:
        return None


MAX_SHOWN_TEXT = 128_000
"""Characters of one text block in a tool call's content, for any runtime: the native
engine bounds what its tools show well below this (`[limits] max_shown_chars`); a
foreign CLI's tool output is bounded here, before it is journaled and sent."""


@dataclass(slots=True)
class SessionEmitter:
    """Journals each event, then shows it on every attached link. A link that fails
    to show is logged and skipped: one broken editor never stops the turn. Tool
    content is bounded first (`MAX_SHOWN_TEXT`), whichever runtime sent it."""

    store: SqliteStore
    session_id: str
    links: Callable[[], list[ClientLink]]
    now: Callable[[], str]

    async def emit(self, event: SessionEvent) -> None:
        if isinstance(event, ToolCallStarted | ToolCallUpdated) and event.content:
            event = replace(event, content=bound_shown(event.content, MAX_SHOWN_TEXT // 2))
        wire = self.store.append_event(self.session_id, to_wire(event))  # standard JSON
        if isinstance(event, SessionInfoUpdated) and event.title:
            self.store.update(self.session_id, title=event.title, updated_at=self.now())
        await self.show(wire)

    async def show(self, wire: Mapping[str, Any]) -> None:
        for link in list(self.links()):
            try:
                await link.send_update(self.session_id, wire)
            except Exception:
                log.exception("could not show an update on a connection; skipping it")


@dataclass(frozen=True, slots=True)
class BoundedQuestions:
    """The prompting link's questions, bounded like approvals: no answer in
    `timeout` seconds, or a failing link, is no answer (the model is told)."""

    link: AsksQuestions
    timeout: float

    async def ask_user(self, question: Question) -> str | None:
        try:
            return await asyncio.wait_for(self.link.ask_user(question), self.timeout)
        except TimeoutError:
            log.warning("question %s timed out; unanswered", question.tool_call_id)
        except Exception:
            log.exception("question %s failed; unanswered", question.tool_call_id)
        return None


@dataclass(slots=True)
class SessionApprover:
    """Asks the prompting connection. No connection, a failing one, or no answer in
    `timeout` seconds is a rejection: with nobody to ask, the alternative would be
    granting in silence."""

    session: Callable[[], LiveSession]
    timeout: float

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        link = self.session().asker
        if link is None:
            return ApprovalDecision.REJECT_ONCE
        try:
            return await asyncio.wait_for(link.ask(request), self.timeout)
        except TimeoutError:
            log.warning("approval for %s timed out; rejecting", request.tool_call_id)
        except Exception:
            log.exception("approval for %s failed; rejecting", request.tool_call_id)
        return ApprovalDecision.REJECT_ONCE
