"""A prompt's way through a live session: the queue, the turn slot, then a turn,
a session command or a prompt command, journaled as it goes.

Turn discipline: one turn at a time per session. A prompt that arrives while a turn
runs waits its turn (at most `MAX_QUEUED` waiting, in order; the asking editor is
told it is queued), never interleaves; one beyond that is refused with
`SessionBusy`. Cancelling one prompt's call (its request was cancelled) takes that
prompt alone out of the queue, or ends its turn when it is the running one. Each
turn first confirms the session's lease (`hold`): a process that stalled past it
must not write into a session another process took over.

The person's prompt is journaled before anything of the turn is shown, and shown
in the other editors attached to the session; approvals and questions go to the
editor whose prompt runs (`LiveSession.asker`). With checkpoints on, a turn records
one before it changes anything (the native runtime asks the model meanwhile, its
tools held until the checkpoint settles) and, when it wrote (or cannot say), one
after (`loopd.sessions.rewind`); `/rewind` is run here like a session command.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from loopd.checkpoints.book import Kind
from loopd.config.trust.prompt import WorkspaceTrust
from loopd.protocol.errors import LoopdError
from loopd.protocol.events import (
    AgentMessageChunk,
    ContentBlock,
    Prompt,
    SessionInfoUpdated,
    UserMessageChunk,
)
from loopd.protocol.events_wire import to_wire
from loopd.protocol.turns import Outcome
from loopd.sessions.commands import (
    CONTINUE,
    PromptCommands,
    command_text,
    fills_in,
    run_command,
    slash_command,
)
from loopd.sessions.live import ClientLink, LiveSession, SessionApprover, SessionEmitter
from loopd.sessions.queue import say_queued, title_of
from loopd.sessions.resume import CONTINUE_PROMPT, NOTHING_TO_CONTINUE, TURN_OPEN, was_cut
from loopd.sessions.rewind import (
    REWIND,
    HoldsEffects,
    PendingCheckpoint,
    Rewinds,
    listing,
    parse_rewind,
    writes_of,
)
from loopd.sessions.transcript import HANDOVER, with_handover
from loopd.store.sqlite import SqliteStore

MAX_QUEUED = 64  # prompts waiting behind the running turn (seed 001's managed input queue)


@dataclass(frozen=True, slots=True)
class Turns:
    """What a turn needs of its manager: the store and clock, the approval timeout,
    the workspace-trust step of a session's first turn, the lease (`hold`) and
    what is saved after each turn (`save`)."""

    store: SqliteStore
    now: Callable[[], str]
    approval_timeout: float
    workspace: WorkspaceTrust | None
    hold: Callable[[str], None]
    save: Callable[[LiveSession], None]
    rewinds: Rewinds | None = None  # None: no checkpoints are taken

    async def run(
        self,
        live: LiveSession,
        prompt: Prompt,
        link: ClientLink,
        on_start: Callable[[], None] | None = None,
    ) -> Outcome:
        """`SessionManager.prompt`, on the live session: queued behind the running
        turn, then a rewind, a continue, a command or a turn of the runtime."""
        generation = live.generation
        async with live.slot(MAX_QUEUED, lambda: say_queued(live, link, prompt)):
            if live.generation != generation:
                return Outcome(turn_id="", stop_reason="cancelled")
            self.hold(live.id)  # still ours (not taken over while this process stalled)
            if on_start is not None:
                on_start()
            if self.rewinds is not None and _names(prompt, REWIND.name):
                return await self._rewind(live, self.rewinds, prompt, link)
            command = slash_command(prompt, live.runtime)
            if command == CONTINUE.name:
                return await self._continue(live, prompt, link)
            if command is not None and fills_in(live.runtime, command):
                return await self._prompt_command(live, command, prompt, link)
            if command is not None:
                return await self._command(live, command, prompt, link)
            return await self._turn(live, prompt, link)

    async def _turn(self, live: LiveSession, prompt: Prompt, link: ClientLink) -> Outcome:
        emitter = self.emitter(live)
        await self._journal_prompt(live, prompt, link)
        if live.record.title is None and prompt.text.strip():
            title = title_of(prompt.text)
            live.record = replace(live.record, title=title)
            await emitter.emit(SessionInfoUpdated(title=title))
        live.asker = link
        handed = live.record.runtime_state.get(HANDOVER)
        if handed:  # the first turn after a runtime switch
            prompt = with_handover(prompt, handed)
        turn: asyncio.Task[Outcome] | None = None
        wrote: int | None = None
        pending: PendingCheckpoint | None = None
        try:
            if self.workspace is not None and not live.greeted:
                live.greeted = True
                approver = SessionApprover(lambda: live, self.approval_timeout)
                await self.workspace.first_turn(live.id, emitter, approver)
            pending = await self._begin_checkpoint(live, title_of(prompt.text))
            wrote = writes_of(live.runtime)
            self._mark_open(live)
            turn = live.turn = asyncio.create_task(live.runtime.prompt(prompt))
            return await asyncio.shield(turn)
        except asyncio.CancelledError:
            # The caller gave up (its request was cancelled, its connection closed):
            # the turn is cancelled too, and the session stays locked until the
            # runtime has paired its tool calls, so the next prompt finds it whole.
            if turn is not None:
                await live.runtime.cancel()
                await asyncio.wait([turn])
            raise
        finally:
            live.asker = None
            live.turn = None
            self.save(live)
            if pending is not None:
                await pending.settled()
                if isinstance(live.runtime, HoldsEffects):
                    live.runtime.hold_effects(None)
            if turn is not None and (wrote is None or writes_of(live.runtime) != wrote):
                await self._checkpoint(live, "after")

    async def _begin_checkpoint(self, live: LiveSession, label: str) -> PendingCheckpoint | None:
        """Start the prompt's checkpoint. A runtime that `HoldsEffects` holds its
        tools until it settles (the turn asks the model meanwhile); for any other
        the turn waits for it here, as the runtime's own tools could not be held."""
        if self.rewinds is None:
            return None
        pending = self.rewinds.begin(live, "prompt", label, lambda note: self._tell(live, note))
        if isinstance(live.runtime, HoldsEffects):
            live.runtime.hold_effects(pending.settled)
        else:
            await pending.settled()
        return pending

    async def _checkpoint(self, live: LiveSession, kind: Kind, label: str = "") -> None:
        """Record a checkpoint, saying why when one is skipped or a file left out."""
        if self.rewinds is None:
            return
        note = await self.rewinds.record(live, kind, label)
        if note:
            await self._tell(live, note)

    async def _tell(self, live: LiveSession, note: str) -> None:
        await self.emitter(live).emit(AgentMessageChunk(note, f"msg_{uuid.uuid4().hex[:12]}"))

    async def _rewind(
        self, live: LiveSession, rewinds: Rewinds, prompt: Prompt, link: ClientLink
    ) -> Outcome:
        """`/rewind`, journaled like a command: the prompt, then what it did. Files
        changed outside the agent since are put to the person (`Rewinds.asking`)."""
        await self._journal_prompt(live, prompt, link)
        try:
            args = parse_rewind(command_text(prompt).split())
            if args is None:
                note = listing(rewinds.points(live.id))
            else:
                approver = SessionApprover(lambda: live, self.approval_timeout)
                note = await rewinds.asking(live, args, link, approver, self.emitter(live))
        except LoopdError as err:
            note = f"/rewind failed: {err}"
        return await self._said(live, note)

    def _mark_open(self, live: LiveSession) -> None:
        """The turn starts: marked in the stored state until it ends (`save`), so a
        crash leaves the mark (see `loopd.sessions.resume`)."""
        state = {**live.record.runtime_state, TURN_OPEN: self.now()}
        live.record = replace(live.record, runtime_state=state)
        self.store.update(live.id, runtime_state=state)

    async def _continue(self, live: LiveSession, prompt: Prompt, link: ClientLink) -> Outcome:
        """`/continue`: the cut-off turn carried on, as a new turn (see the module doc
        of `loopd.sessions.resume`); a note when the last turn ended."""
        if not was_cut(live):
            return await self._noted(live, prompt, NOTHING_TO_CONTINUE, link)
        return await self._turn(live, CONTINUE_PROMPT, link)

    async def _command(
        self, live: LiveSession, name: str, prompt: Prompt, link: ClientLink
    ) -> Outcome:
        """A session command, journaled like a turn: the prompt, then a note of what
        happened (or why it did not)."""
        try:
            note = await run_command(live.runtime, name)
        except LoopdError as err:
            note = f"/{name} failed: {err}"
        if note is None:
            return Outcome(turn_id="", stop_reason="cancelled")
        return await self._noted(live, prompt, note, link)

    async def _prompt_command(
        self, live: LiveSession, name: str, prompt: Prompt, link: ClientLink
    ) -> Outcome:
        """A prompt command: the turn runs the prompt it fills in; when it cannot be
        filled in, the typed prompt is journaled with why."""
        assert isinstance(live.runtime, PromptCommands)
        try:
            filled = await live.runtime.expand(name, command_text(prompt))
        except LoopdError as err:
            return await self._noted(live, prompt, f"/{name} failed: {err}", link)
        return await self._turn(live, filled, link)

    async def _noted(
        self, live: LiveSession, prompt: Prompt, note: str, link: ClientLink
    ) -> Outcome:
        await self._journal_prompt(live, prompt, link)
        return await self._said(live, note)

    async def _said(self, live: LiveSession, note: str) -> Outcome:
        await self.emitter(live).emit(AgentMessageChunk(note, f"msg_{uuid.uuid4().hex[:12]}"))
        self.store.update(live.id, updated_at=self.now())
        return Outcome(turn_id="", stop_reason="end_turn")

    async def _journal_prompt(self, live: LiveSession, prompt: Prompt, link: ClientLink) -> None:
        """Journal the person's prompt, and show it in the other editors attached to
        the session (the prompting one shows what was typed itself)."""
        message_id = f"user_{uuid.uuid4().hex[:12]}"
        chunks = [_user_chunk(block, message_id) for block in prompt.blocks]
        for chunk in chunks:
            self.store.append_event(live.id, chunk)
        others = [other for other in live.links if other is not link]
        emitter = SessionEmitter(self.store, live.id, lambda: others, self.now)
        for chunk in chunks:
            await emitter.show(chunk)

    def emitter(self, live: LiveSession) -> SessionEmitter:
        """Journals, then shows on every editor attached to `live`."""
        return SessionEmitter(self.store, live.id, lambda: live.links, self.now)


def _names(prompt: Prompt, name: str) -> bool:
    words = prompt.text.strip().split(maxsplit=1)
    return bool(words) and words[0] == f"/{name}"


def _user_chunk(block: ContentBlock, message_id: str) -> dict[str, Any]:
    return to_wire(UserMessageChunk(block, message_id))
