"""`LoopdAgent`: the ACP agent of one editor connection, a thin layer over the
SessionManager.

Each handler parses (the SDK already validated the params), calls the manager, and
translates the answer; errors are mapped to JSON-RPC codes in `loopd.acp.errors` and
nowhere else. Every method the SDK routes is either implemented or refused with
method-not-found (`refuse_unimplemented`), so a client never believes a stub.

The handlers are split by concern and joined here: `AgentBase` (per-connection state,
the manager that may still be starting), `SessionLifecycle` (open, list, close,
delete), `Turns` (prompt, cancel, settings), `Extensions` (`_loopd/...`). This module
keeps what a connection starts with: `initialize`, with the capabilities loopd
advertises, and authentication.
"""

from __future__ import annotations

from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentAuthCapabilities,
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LogoutCapabilities,
    LogoutResponse,
    McpCapabilities,
    PromptCapabilities,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
)

from loopd import __version__
from loopd.acp.auth import LOGIN_METHOD, auth_methods, auth_required
from loopd.acp.errors import mapped_errors, refuse_unimplemented
from loopd.acp.extensions import (
    CHECKPOINTS_METHOD,
    MENTIONS_METHOD,
    RESTORE_METHOD,
    STEER_METHOD,
    Extensions,
)
from loopd.acp.lifecycle import SessionLifecycle
from loopd.acp.turns import Turns

CAPABILITIES = AgentCapabilities(
    load_session=True,
    auth=AgentAuthCapabilities(logout=LogoutCapabilities()),
    prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
    mcp_capabilities=McpCapabilities(http=True, sse=False),
    session_capabilities=SessionCapabilities(
        list=SessionListCapabilities(),
        resume=SessionResumeCapabilities(),
        close=SessionCloseCapabilities(),
        delete=SessionDeleteCapabilities(),
        additional_directories=SessionAdditionalDirectoriesCapabilities(),
        fork=SessionForkCapabilities(),
    ),
    field_meta={
        "loopd": {
            "steer": f"_{STEER_METHOD}",
            "mentions": f"_{MENTIONS_METHOD}",
            "checkpoints": f"_{CHECKPOINTS_METHOD}",
            "restore": f"_{RESTORE_METHOD}",
            "forkBeforePrompt": True,
            "verification": True,
        }
    },
)


class LoopdAgent(SessionLifecycle, Turns, Extensions):
    """`client_answers=False`: the client cannot answer requests (see `AcpLink`)."""

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Always our own version: v1 is the only one loopd speaks, and echoing an
        unknown one would claim support we do not have."""
        self._link().capabilities = client_capabilities
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=CAPABILITIES,
            auth_methods=auth_methods(client_capabilities),
            agent_info=Implementation(name="loopd", title="loopd", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """After the person ran `loopd login`: succeeds when a runtime is usable now,
        else answers `auth_required` again with the reason."""
        if method_id != LOGIN_METHOD:
            raise RequestError.invalid_params({"details": f"unknown auth method {method_id!r}"})
        manager = await self.manager()
        with mapped_errors():
            usable = await manager.refresh_runtimes()
        if not usable:
            raise auth_required(
                "still no usable credentials: finish `loopd login`, or set a provider key "
                "in the environment the editor starts loopd with",
                self._link().capabilities,
            )
        return AuthenticateResponse()

    async def logout(self, **kwargs: Any) -> LogoutResponse:
        """Forgets what `loopd login` stored; keys from the environment still apply."""
        manager = await self.manager()
        with mapped_errors():
            await manager.logout()
        return LogoutResponse()


refuse_unimplemented(LoopdAgent)
