"""`Extensions`: loopd's own ACP methods, `_loopd/...` on the wire.

`_loopd/session/steer` `{sessionId, text}`: say something to the running turn, read
at its next step. `_loopd/session/mentions` `{sessionId}`: the session's MCP resources
a prompt may mention with a `resource_link` (as in the LSP extension; ACP clients such
as Zed fill their @ menu themselves). `_loopd/session/checkpoints` and
`_loopd/session/restore`: the session's checkpoints, and going back to one (the JSON
is `loopd.sessions.rewind_wire`'s; `/rewind` does the same from the prompt). All are
advertised under `agentCapabilities._meta.loopd`; any other extension method is
method-not-found, and extension notifications are ignored.
"""

from __future__ import annotations

import logging
from typing import Any

from acp import RequestError

from loopd.acp.base import AgentBase
from loopd.acp.errors import mapped_errors
from loopd.protocol.mentions import mention_to_wire
from loopd.sessions.rewind_wire import checkpoints_to_wire, restore_from_wire

log = logging.getLogger(__name__)

STEER_METHOD = "loopd/session/steer"  # `_loopd/session/steer` on the wire
MENTIONS_METHOD = "loopd/session/mentions"
CHECKPOINTS_METHOD = "loopd/session/checkpoints"
RESTORE_METHOD = "loopd/session/restore"


class Extensions(AgentBase):
    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Steer: no turn running is an invalid request (send a prompt instead)."""
        if method == MENTIONS_METHOD:
            return await self._mentions(params)
        if method in (CHECKPOINTS_METHOD, RESTORE_METHOD):
            return await self._checkpoints(method, params)
        if method != STEER_METHOD:
            raise RequestError.method_not_found(f"_{method}")
        session_id, text = params.get("sessionId"), params.get("text")
        if not isinstance(session_id, str) or not isinstance(text, str):
            raise RequestError.invalid_params({"details": "sessionId and text are required"})
        manager = await self.manager()
        with mapped_errors(session_id):
            await manager.steer(session_id, text)
        return {}

    async def _mentions(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RequestError.invalid_params({"details": "sessionId is required"})
        manager = await self.manager()
        with mapped_errors(session_id):
            mentions = manager.mentions(session_id)
        return {"mentions": [mention_to_wire(m) for m in mentions]}

    async def _checkpoints(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """`checkpoints` and `restore` (`loopd.sessions.rewind_wire` has their JSON)."""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RequestError.invalid_params({"details": "sessionId is required"})
        manager = await self.manager()
        with mapped_errors(session_id):
            if method == CHECKPOINTS_METHOD:
                manager.view(session_id)  # open here, or SessionNotFound
                return checkpoints_to_wire(manager.checkpoints_of(session_id))
            return await restore_from_wire(manager, session_id, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.debug("ignoring notification _%s", method)
