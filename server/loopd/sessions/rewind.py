"""Rewind: a session's checkpoints, and going back to one (`loopd.checkpoints`).

Before each turn the session records a checkpoint of its roots and of the model
context, after it one of what the turn left; `/rewind` (any editor), the
`checkpoints`/`restore` extension methods and `loopd sessions rewind` list them and
restore one: the code, the conversation, or both; `redo` goes back to what the last
restore replaced. A restore runs between turns (it waits for the turn slot), is
journaled as a note (the journal stays whole), and a runtime whose context is
loopd's store reloads it (`ContextRestoring`), so the model's next request is
exactly what it was at that point.

A runtime that `HoldsEffects` (the native one) starts its turn while the prompt's
checkpoint is still taken (`Rewinds.begin`): the model is asked at once, and each
tool call or done check of the turn waits until the checkpoint is recorded or said
skipped (`PendingCheckpoint.settled`), so nothing of the turn changes a file the
checkpoint has not seen as it was. Its model context is marked before the turn
starts, so the checkpoint keeps the conversation as it was before the prompt.
Any other runtime runs its own tools: its turn starts once the checkpoint settled.

`/rewind` alone lists the points; `/rewind N [code|conversation|both] [force]`
restores to before prompt N, `/rewind redo [force]` redoes. Files changed outside
the agent since are put to the person through the Approver (`Rewinds.asking`);
the extension methods and the CLI refuse instead, naming them (`force` overrides).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from loopd.checkpoints import conversation
from loopd.checkpoints.book import Checkpoint, Kind
from loopd.checkpoints.service import SCOPES, Checkpoints, Conflict, Restored, Scope
from loopd.engine.ports import Approver, Emitter
from loopd.protocol.approvals import ApprovalRequest
from loopd.protocol.errors import ConfigError
from loopd.protocol.events import (
    Command,
    Location,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    ToolStatus,
)
from loopd.sessions.live import ClientLink, LiveSession

log = logging.getLogger(__name__)

REWIND = Command("rewind", "Go back to before an earlier prompt: /rewind N [code|conversation]")
REDO = "redo"


@runtime_checkable
class ContextRestoring(Protocol):
    """A runtime whose model context is the store's: after the store's messages are
    put back it reads them again."""

    async def reload_context(self) -> None: ...


@runtime_checkable
class WriteCounting(Protocol):
    """A runtime that counts its tools' writes: a turn that leaves the count as it
    was changed nothing, so no `after` checkpoint is taken for it (what changed
    meanwhile was not the agent's, and is asked about as such). What a restore puts
    back counts as writes too (`put_back`): the done check made before it says
    nothing about the files now, so its seal must not outlive the restore."""

    def writes(self) -> int: ...

    def put_back(self, paths: Sequence[str]) -> None: ...


@runtime_checkable
class HoldsEffects(Protocol):
    """A runtime whose turns change files only through loopd's tools and done checks:
    until `hold` returns, none of them runs (None: nothing is held)."""

    def hold_effects(self, hold: Callable[[], Awaitable[None]] | None) -> None: ...


@dataclass(eq=False, slots=True)
class PendingCheckpoint:
    """A checkpoint being recorded (in a thread) while its turn starts."""

    task: asyncio.Future[str]  # the note to show ("" if none)
    say: Callable[[str], Awaitable[None]]
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _said: bool = False

    async def settled(self) -> None:
        """Returns once the checkpoint is recorded or skipped and its note shown (once,
        before any waiter goes on). A waiter cancelled meanwhile leaves it running."""
        async with self._lock:
            if self._said:
                return
            note = await asyncio.shield(self.task)
            self._said = True
            if note:
                await self.say(note)


def writes_of(runtime: object) -> int | None:
    """The runtime's write count, None when it keeps none (every turn may write)."""
    return runtime.writes() if isinstance(runtime, WriteCounting) else None


@dataclass(frozen=True, slots=True)
class RewindArgs:
    point: int | None  # a prompt number; None: the newest redo point
    scope: Scope = "both"
    force: bool = False


def parse_rewind(words: list[str]) -> RewindArgs | None:
    """`/rewind`'s words after the name: None for the listing; raises `ConfigError`."""
    if not words:
        return None
    first, rest = words[0], words[1:]
    if first == REDO:
        point = None
    elif first.isdigit():
        point = int(first)
    else:
        raise ConfigError(f"/rewind takes a prompt number or `redo`, not {first!r}")
    scope: Scope = "both"
    force = False
    for word in rest:
        match word:
            case "force":
                force = True
            case "both" | "code" | "conversation":
                scope = word
            case _:
                raise ConfigError(f"/rewind: {word!r} is not one of {', '.join(SCOPES)}, force")
    return RewindArgs(point, scope, force)


def listing(points: list[Checkpoint]) -> str:
    """What `/rewind` alone shows: each prompt's point, and the redo point."""
    prompts = [p for p in points if p.kind == "prompt"]
    if not prompts:
        return "No checkpoints yet: one is taken before each prompt."
    lines = ["Checkpoints (restore with /rewind N [code|conversation] [force]):"]
    lines += [f"  {p.prompt}. before “{p.label}” ({p.created_at})" for p in prompts]
    if any(p.kind == "redo" for p in points):
        lines.append("  redo: back to before the last restore (/rewind redo)")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Rewinds:
    """The session layer's side of checkpoints: record them around turns, restore."""

    checkpoints: Checkpoints
    now: Callable[[], str]

    def begin(
        self, live: LiveSession, kind: Kind, label: str, say: Callable[[str], Awaitable[None]]
    ) -> PendingCheckpoint:
        """Start recording one checkpoint of the session; the model context is marked
        now, before the turn can add to it. `say` shows its note."""
        talk = isinstance(live.runtime, ContextRestoring)
        try:
            at = conversation.mark(self.checkpoints.store, live.id) if talk else None
        except Exception as err:  # the store cannot be read: the checkpoint fails below
            log.exception("checkpoint of %s failed", live.id)
            failed = asyncio.get_running_loop().create_future()
            failed.set_result(_failed(err))
            return PendingCheckpoint(failed, say)
        return PendingCheckpoint(asyncio.ensure_future(self._record(live, kind, label, at)), say)

    async def record(self, live: LiveSession, kind: Kind, label: str = "") -> str:
        """Record one checkpoint of the session; the note to show ("" if none)."""
        return await self._record(live, kind, label, None)

    async def _record(
        self, live: LiveSession, kind: Kind, label: str, at: conversation.Mark | None
    ) -> str:
        roots = [live.record.cwd, *live.record.additional_dirs]
        talk = isinstance(live.runtime, ContextRestoring)
        try:
            recorded = await asyncio.to_thread(
                self.checkpoints.record, live.id, kind, roots, self.now(), label, talk, at
            )
        except Exception as err:  # the turn runs without it, and says so
            log.exception("checkpoint of %s failed", live.id)
            return _failed(err)
        return recorded.note

    def points(self, session_id: str) -> list[Checkpoint]:
        return self.checkpoints.of(session_id)

    def find(self, session_id: str, point: int | None) -> Checkpoint:
        """Prompt `point`'s checkpoint (None: the newest redo point); `ConfigError`."""
        points = self.points(session_id)
        if point is None:
            found = [p for p in points if p.kind == "redo"]
            if not found:
                raise ConfigError("nothing to redo: no restore was made in this session")
            return found[-1]
        for p in points:
            if p.kind == "prompt" and p.prompt == point:
                return p
        known = ", ".join(str(p.prompt) for p in points if p.kind == "prompt") or "none"
        raise ConfigError(f"no checkpoint before prompt {point} (this session has: {known})")

    async def asking(
        self, live: LiveSession, args: RewindArgs, link: ClientLink,
        approver: Approver, emitter: Emitter,
    ) -> str:  # fmt: skip
        """`restore`, and when files changed outside the agent since, the person is
        asked through `approver` (a tool call named for what would be overwritten):
        allowed, they are overwritten; anything else leaves everything as it is.
        The note to show."""
        try:
            return (await self.restore(live, args)).summary
        except Conflict as refused:
            asked = await _ask_overwrite(live, link, approver, emitter, refused)
            if not asked:
                return f"Nothing was restored: {refused.paths_said}"
        return (await self.restore(live, replace(args, force=True))).summary

    async def restore(self, live: LiveSession, args: RewindArgs) -> Restored:
        """Restore between turns (the caller holds the turn slot). Raises `Conflict`
        (files changed outside the agent, unless `force`) or another `LoopdError`."""
        target = self.find(live.id, args.point)
        if args.scope != "code" and not isinstance(live.runtime, ContextRestoring):
            raise ConfigError("this session's runtime keeps its own conversation: restore code")
        done = await asyncio.to_thread(
            self.checkpoints.restore, live.id, target, args.scope, self.now(), args.force
        )
        if isinstance(live.runtime, WriteCounting):
            live.runtime.put_back((*done.written, *done.removed))
        if done.messages is not None and isinstance(live.runtime, ContextRestoring):
            await live.runtime.reload_context()
        return done


def _failed(err: Exception) -> str:
    return f"Checkpoint skipped: it could not be recorded ({err})."


async def _ask_overwrite(
    live: LiveSession, link: ClientLink, approver: Approver, emitter: Emitter, refused: Conflict
) -> bool:
    """Whether the person lets the restore overwrite what changed outside the agent."""
    call_id = f"rewind_{uuid.uuid4().hex[:12]}"
    title = f"Overwrite {len(refused.paths)} files changed outside the agent"
    listed = (TextBlock(refused.paths_said),)
    where = tuple(Location(p) for p in refused.paths)
    await emitter.emit(ToolCallStarted(call_id, title, "edit", "pending", None, where, listed))
    request = ApprovalRequest(
        live.id, call_id, "rewind", title, "edit", {"paths": list(refused.paths)},
        str(refused), listed, where,
    )  # fmt: skip
    asker, live.asker = live.asker, link  # the approver asks the prompting editor
    try:
        allowed = (await approver.approve(request)).allowed
    finally:
        live.asker = asker
    status: ToolStatus = "completed" if allowed else "failed"
    await emitter.emit(ToolCallUpdated(call_id, status=status))
    return allowed
