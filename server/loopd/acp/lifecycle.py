"""`SessionLifecycle`: the ACP handlers that open, list, close and delete sessions.

Every opening answer (new, load, resume, fork) carries the session's config options
and the legacy views of its mode and model options, so a client that only knows the
old APIs still shows them. What must follow an opening (the available commands) waits
until the response is on the wire: an update that names a session the client has not
yet been told about is dropped by some clients (zed#60199). `observe` is the
connection observer that sends it.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable
from typing import Any

from acp import RequestError
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    CloseSessionResponse,
    DeleteSessionResponse,
    ForkSessionResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    ResumeSessionResponse,
    SessionInfo,
)

from loopd.acp.base import AgentBase
from loopd.acp.errors import mapped_errors
from loopd.acp.models import ForkSession, LoadSession, NewSession, ResumeSession, model_state
from loopd.acp.translate import config_options, mcp_configs, modes
from loopd.protocol.events import AvailableCommandsUpdated
from loopd.protocol.events_wire import to_wire
from loopd.sessions.manager import SessionView

# Requests that open a session: what they answer must reach the client before any
# update that names the session (zed#60199), so those wait for the response.
_OPENING = ("session/new", "session/load", "session/resume")


class SessionLifecycle(AgentBase):
    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        _require_absolute(cwd, additional_directories)
        manager = await self.manager()
        with mapped_errors(capabilities=self._link().capabilities):
            view = await manager.new_session(
                cwd,
                self._link(),
                additional_directories or (),
                mcp_configs(mcp_servers),
            )
        self._after_open[view.id] = view.commands
        return NewSession(session_id=view.id, **_options(view))

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """Replays the whole history on this connection, then answers."""
        view = await self._attach(session_id, mcp_servers, replay=True)
        return LoadSession(**_options(view))

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        view = await self._attach(session_id, mcp_servers, replay=False)
        return ResumeSession(**_options(view))

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        """A new session with the history so far, on the same runtime; the two then
        continue independently. A runtime with a history of its own refuses. With
        `_meta.loopd.beforePrompt` N the fork's conversation is the one before prompt
        N (a checkpoint of the session: `loopd.sessions.rewind`)."""
        _require_absolute(cwd, additional_directories)
        manager = await self.manager()
        point = _before_prompt(kwargs)
        dirs, servers = additional_directories or (), mcp_configs(mcp_servers)
        with mapped_errors(session_id, self._link().capabilities):
            if point is None:
                view = await manager.fork_session(session_id, cwd, self._link(), dirs, servers)
            else:
                view = await manager.fork_at(session_id, point, cwd, self._link(), dirs, servers)
        self._after_open[view.id] = view.commands
        return ForkSession(session_id=view.id, **_options(view))

    async def _attach(
        self, session_id: str, servers: list[Any] | None, replay: bool
    ) -> SessionView:
        manager = await self.manager()
        with mapped_errors(session_id):
            view = await manager.load_session(
                session_id, self._link(), mcp_configs(servers), replay=replay
            )
        self._after_open[view.id] = view.commands
        return view

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        if cursor is not None and "|" not in cursor:
            raise RequestError.invalid_params(
                {"details": f"not a cursor from this agent: {cursor}"}
            )
        page = (await self.manager()).list_sessions(cwd, cursor)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=r.id,
                    cwd=r.cwd,
                    additional_directories=list(r.additional_dirs) or None,
                    title=r.title,
                    updated_at=r.updated_at or None,
                )
                for r in page.sessions
            ],
            next_cursor=page.next_cursor,
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        manager = await self.manager()
        with mapped_errors(session_id):
            await manager.close_session(session_id, self._link())
        return CloseSessionResponse()

    async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
        manager = await self.manager()
        with mapped_errors(session_id):
            await manager.delete_session(session_id)
        return DeleteSessionResponse()

    def observe(self, event: StreamEvent) -> Awaitable[None] | None:
        """Connection observer: once the response to a session/new, load or resume is
        on the wire, send what must follow it (the available commands)."""
        message = event.message
        if event.direction is StreamDirection.INCOMING:
            if message.get("method") in _OPENING and "id" in message:
                params = message.get("params")
                sid = params.get("sessionId") if isinstance(params, dict) else None
                self._opening[message["id"]] = sid
            return None
        if "method" in message or message.get("id") not in self._opening:
            return None
        sid = self._opening.pop(message["id"])
        result = message.get("result")
        if isinstance(result, dict):
            sid = result.get("sessionId", sid)
        commands = self._after_open.pop(sid, ()) if isinstance(sid, str) else ()
        if not commands or not isinstance(sid, str):
            return None
        return self._link().send_update(sid, to_wire(AvailableCommandsUpdated(commands)))


def _require_absolute(cwd: str, additional_directories: list[str] | None) -> None:
    if not all(os.path.isabs(r) for r in [cwd, *(additional_directories or ())]):
        raise RequestError.invalid_params({"details": "cwd and directories must be absolute"})


def _options(view: SessionView) -> dict[str, Any]:
    """What every opening answer carries: the options, and the legacy views of the
    mode and model options."""
    options = view.config_options
    return {
        "modes": modes(options),
        "models": model_state(options),
        "config_options": config_options(options),
    }


def _before_prompt(meta: dict[str, Any]) -> int | None:
    """`_meta.loopd.beforePrompt` of a fork request: a prompt number, or None."""
    ours = meta.get("loopd")
    point = ours.get("beforePrompt") if isinstance(ours, dict) else None
    if point is None:
        return None
    if not isinstance(point, int) or isinstance(point, bool):
        raise RequestError.invalid_params({"details": "_meta.loopd.beforePrompt is a number"})
    return point
