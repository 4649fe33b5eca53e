"""`AgentBase`: what every ACP handler of one editor connection shares.

Per-connection state lives on the agent object (the `AcpLink` with the client's
capabilities, the sessions opened but not yet announced), never globally, so one
manager can serve several connections. The handlers themselves are split by concern
(`lifecycle`, `turns`, `extensions`) and joined in `loopd.acp.agent.LoopdAgent`.

The manager may still be starting (a future): `loopd acp` answers `initialize` at once
and builds the app (catalog discovery spawns CLIs, the store opens) meanwhile. Every
method that needs sessions awaits `manager()`; a start that failed answers each of
them with the reason, and the process stays up to say so.
"""

from __future__ import annotations

from typing import Any

from acp import Agent, RequestError
from acp.interfaces import Client

from loopd.acp.link import AcpLink
from loopd.protocol.events import Command
from loopd.sessions.manager import SessionManager
from loopd.sessions.starting import StartFailed, Starting, started, wait_started


class AgentBase(Agent):
    """`client_answers=False`: the client cannot answer requests (see `AcpLink`)."""

    def __init__(
        self,
        manager: Starting,
        client_answers: bool = True,
    ) -> None:
        self._manager = manager
        self._client_answers = client_answers
        self.client: Client | None = None
        self.link: AcpLink | None = None
        self._opening: dict[Any, str | None] = {}  # request id -> session id (None: new)
        self._after_open: dict[str, tuple[Command, ...]] = {}

    def on_connect(self, conn: Client) -> None:
        self.client = conn
        self.link = AcpLink(conn, answers=self._client_answers)

    @property
    def started(self) -> SessionManager | None:
        """The manager if it is ready, else None (still starting, or failed)."""
        return started(self._manager)

    async def manager(self) -> SessionManager:
        try:
            return await wait_started(self._manager)
        except StartFailed as err:
            raise RequestError.internal_error({"details": str(err)}) from err

    def _link(self) -> AcpLink:
        if self.link is None:
            raise RequestError.internal_error({"details": "no connection"})
        return self.link
