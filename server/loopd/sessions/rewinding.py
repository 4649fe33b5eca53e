"""`Rewinding`: the session manager's checkpoint operations, for the frontends.

Listing a session's checkpoints, restoring one between turns (journaled as a note),
editing an earlier prompt (restore to before it, then run the edited prompt) and
forking from one (a new session whose conversation is the one before that prompt).
A mixin of `SessionManager`, which it reaches through `_Manager` only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from loopd.checkpoints.book import Checkpoint
from loopd.checkpoints.service import Checkpoints, Restored
from loopd.mcp.config import McpServerConfig
from loopd.protocol.errors import ConfigError
from loopd.protocol.events import AgentMessageChunk, Prompt
from loopd.protocol.turns import Outcome
from loopd.sessions.live import ClientLink, LiveSession, SessionEmitter
from loopd.sessions.options import SessionView
from loopd.sessions.rewind import RewindArgs, Rewinds
from loopd.sessions.turns import MAX_QUEUED


class _Manager(Protocol):
    @property
    def checkpoints(self) -> Checkpoints | None: ...

    @property
    def now(self) -> Callable[[], str]: ...

    def _require(self, session_id: str) -> LiveSession: ...

    def _emitter(self, live: LiveSession) -> SessionEmitter: ...

    async def prompt(
        self, session_id: str, prompt: Prompt, link: ClientLink,
        on_start: Callable[[], None] | None = None,
    ) -> Outcome: ...  # fmt: skip

    async def fork_session(
        self, session_id: str, cwd: str, link: ClientLink,
        additional_dirs: Sequence[str] = (), mcp_servers: Sequence[McpServerConfig] = (),
    ) -> SessionView: ...  # fmt: skip


class Rewinding:
    __slots__ = ()

    def checkpoints_of(self: _Manager, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first (none when they are off)."""
        return [] if self.checkpoints is None else self.checkpoints.of(session_id)

    async def restore(self: _Manager, session_id: str, args: RewindArgs) -> Restored:
        """Restore a checkpoint between turns (`loopd.sessions.rewind`); journaled as a
        note. Raises `Conflict` or another `LoopdError` and then changes nothing."""
        live, rewinds = self._require(session_id), _rewinds(self)
        async with live.slot(MAX_QUEUED, _unsaid):
            done = await rewinds.restore(live, args)
        note = AgentMessageChunk(done.summary, f"msg_{uuid.uuid4().hex[:12]}")
        await self._emitter(live).emit(note)
        return done

    async def edit(
        self: _Manager, session_id: str, point: int, prompt: Prompt, link: ClientLink
    ) -> Outcome:
        """Edit prompt `point`: restore to before it (code and conversation), then run
        `prompt` in its place."""
        await Rewinding.restore(self, session_id, RewindArgs(point))
        return await self.prompt(session_id, prompt, link)

    async def fork_at(
        self: _Manager, session_id: str, point: int, cwd: str, link: ClientLink,
        additional_dirs: Sequence[str] = (), mcp_servers: Sequence[McpServerConfig] = (),
    ) -> SessionView:  # fmt: skip
        """A fork of `session_id` whose conversation is the one before prompt `point`
        (the files are shared: restore them with `restore` in either session)."""
        rewinds = _rewinds(self)
        target = rewinds.find(session_id, point)
        view = await self.fork_session(session_id, cwd, link, additional_dirs, mcp_servers)
        rewinds.checkpoints.book.copy(session_id, view.id, target.seq)
        await Rewinding.restore(self, view.id, RewindArgs(point, "conversation"))
        return view


async def _unsaid() -> None:
    """A restore that waits for the running turn tells nobody: its answer waits."""


def _rewinds(manager: _Manager) -> Rewinds:
    if manager.checkpoints is None:
        raise ConfigError("checkpoints are off for this loopd")
    return Rewinds(manager.checkpoints, manager.now)
