"""`LoopdAgent`: the ACP agent of one editor connection, a thin layer over the
SessionManager.

Each handler parses (the SDK already validated the params), calls the manager, and
translates the answer; errors are mapped to JSON-RPC codes here and nowhere else.
Every method the SDK routes is either implemented or refused with method-not-found:
subclassing `acp.Agent` would otherwise inherit stubs that answer `{}` to requests we
never handle, and a client would believe them.

Per-connection state lives on this object (client capabilities, the `AcpLink`), never
globally, so one manager can serve several connections.

The manager may still be starting (a future): `loopd acp` answers `initialize` at once
and builds the app (catalog discovery spawns CLIs, the store opens) meanwhile. Every
method that needs sessions awaits it; a start that failed answers each of them with
the reason, and the process stays up to say so.
"""

from __future__ import annotations

import inspect
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from acp import PROTOCOL_VERSION, Agent, RequestError
from acp.connection import StreamDirection, StreamEvent
from acp.interfaces import Client
from acp.schema import (
    AgentAuthCapabilities,
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    DeleteSessionResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    LogoutCapabilities,
    LogoutResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from loopd import __version__
from loopd.acp.auth import LOGIN_METHOD, auth_methods, auth_required
from loopd.acp.link import AcpLink
from loopd.acp.models import (
    ForkSession,
    LoadSession,
    NewSession,
    ResumeSession,
    SetSessionModelResponse,
    model_option,
    model_state,
)
from loopd.acp.translate import (
    PromptBlock,
    UnsupportedContent,
    config_options,
    mcp_configs,
    mode_option,
    modes,
    prompt_of,
)
from loopd.protocol.errors import ConfigError, RuntimeFailure
from loopd.protocol.events import (
    AgentMessageChunk,
    AvailableCommandsUpdated,
    Command,
    to_wire,
)
from loopd.protocol.mentions import mention_to_wire
from loopd.protocol.turns import Outcome
from loopd.sessions.manager import (
    NoRuntime,
    SessionBusy,
    SessionHeld,
    SessionManager,
    SessionNotFound,
    SessionView,
)
from loopd.sessions.queue import NotRunning
from loopd.sessions.starting import StartFailed, Starting, started, wait_started

log = logging.getLogger(__name__)

STEER_METHOD = "loopd/session/steer"  # `_loopd/session/steer` on the wire
MENTIONS_METHOD = "loopd/session/mentions"
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
            "verification": True,
        }
    },
)
# Requests that open a session: what they answer must reach the client before any
# update that names the session (zed#60199), so those wait for the response.
_OPENING = ("session/new", "session/load", "session/resume")


class LoopdAgent(Agent):
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

    # -- initialize and auth -------------------------------------------------------------

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
        with _mapped_errors():
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
        with _mapped_errors():
            await manager.logout()
        return LogoutResponse()

    # -- session lifecycle ---------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        roots = [cwd, *(additional_directories or ())]
        if not all(os.path.isabs(r) for r in roots):
            raise RequestError.invalid_params({"details": "cwd and directories must be absolute"})
        manager = await self.manager()
        with _mapped_errors(capabilities=self._link().capabilities):
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
        continue independently. A runtime with a history of its own refuses."""
        if not all(os.path.isabs(r) for r in [cwd, *(additional_directories or ())]):
            raise RequestError.invalid_params({"details": "cwd and directories must be absolute"})
        manager = await self.manager()
        with _mapped_errors(session_id, self._link().capabilities):
            view = await manager.fork_session(
                session_id,
                cwd,
                self._link(),
                additional_directories or (),
                mcp_configs(mcp_servers),
            )
        self._after_open[view.id] = view.commands
        return ForkSession(session_id=view.id, **_options(view))

    async def _attach(
        self, session_id: str, servers: list[Any] | None, replay: bool
    ) -> SessionView:
        manager = await self.manager()
        with _mapped_errors(session_id):
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
        with _mapped_errors(session_id):
            await manager.close_session(session_id, self._link())
        return CloseSessionResponse()

    async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
        manager = await self.manager()
        with _mapped_errors(session_id):
            await manager.delete_session(session_id)
        return DeleteSessionResponse()

    # -- turns ---------------------------------------------------------------------------

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        """One turn. Whatever goes wrong inside it ends it with a stop reason and a
        message the person can read; a `$/cancel_request` for this request cancels
        this prompt alone: its turn when it runs, its place in the queue when it waits
        (the SDK then answers -32800). A prompt refused because the queue is full is an
        error, never a stop reason a client would take for a finished turn."""
        try:
            content = prompt_of(prompt)
        except UnsupportedContent as err:
            raise RequestError.invalid_params({"details": str(err)}) from err
        link, manager = self._link(), await self.manager()
        try:
            outcome = await manager.prompt(session_id, content, link)
        except SessionNotFound as err:
            raise _not_found(session_id, err) from err
        except SessionBusy as err:  # queue full, or live elsewhere: not a finished turn
            raise _refused(session_id, err) from err
        except Exception as err:
            log.exception("turn in %s failed", session_id)
            await self._say(session_id, f"loopd: the turn failed: {err}")
            return PromptResponse(stop_reason="end_turn")
        return PromptResponse(stop_reason=outcome.stop_reason, field_meta=_meta_of(outcome))

    async def _say(self, session_id: str, text: str) -> None:
        wire = to_wire(AgentMessageChunk(text, f"msg_{uuid.uuid4().hex[:12]}"))
        try:
            await self._link().send_update(session_id, wire)
        except Exception:
            log.warning("could not show a message in %s", session_id, exc_info=True)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        manager = self.started
        if manager is not None:  # nothing can run before the manager exists
            await manager.cancel(session_id)

    # -- modes and config options ----------------------------------------------------------

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        """The deprecated mode API, kept in sync with the `mode` config option: it sets
        that option (the session then tells its clients the new mode and option list,
        once)."""
        manager = await self.manager()
        with _mapped_errors(session_id):
            option = mode_option(manager.view(session_id).config_options)
            if option is None:
                raise RequestError.invalid_params({"details": "this session has no modes"})
            await manager.set_config(session_id, option.id, mode_id)
        return SetSessionModeResponse()

    async def set_session_model(
        self, session_id: str, model_id: str, **kwargs: Any
    ) -> SetSessionModelResponse:
        """The legacy model API: it sets the `model` config option, so the two views
        never disagree."""
        manager = await self.manager()
        with _mapped_errors(session_id):
            option = model_option(manager.view(session_id).config_options)
            if option is None:
                raise RequestError.invalid_params({"details": "this session has no model choice"})
            await manager.set_config(session_id, option.id, model_id)  # tells every client
        return SetSessionModelResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        if not isinstance(value, str):
            raise RequestError.invalid_params({"details": f"{config_id} takes a select value"})
        manager = await self.manager()
        with _mapped_errors(session_id):
            view = await manager.set_config(session_id, config_id, value)
        return SetSessionConfigOptionResponse(config_options=config_options(view.config_options))

    # -- extensions ------------------------------------------------------------------------

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """`_loopd/session/steer` `{sessionId, text}`: say something to the running
        turn, read at its next step. No turn running is an invalid request (send a
        prompt instead). `_loopd/session/mentions` `{sessionId}`: the session's MCP
        resources a prompt may mention with a `resource_link` (as in the LSP
        extension; ACP clients such as Zed fill their @ menu themselves)."""
        if method == MENTIONS_METHOD:
            return await self._mentions(params)
        if method != STEER_METHOD:
            raise RequestError.method_not_found(f"_{method}")
        session_id, text = params.get("sessionId"), params.get("text")
        if not isinstance(session_id, str) or not isinstance(text, str):
            raise RequestError.invalid_params({"details": "sessionId and text are required"})
        manager = await self.manager()
        with _mapped_errors(session_id):
            await manager.steer(session_id, text)
        return {}

    async def _mentions(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RequestError.invalid_params({"details": "sessionId is required"})
        manager = await self.manager()
        with _mapped_errors(session_id):
            mentions = manager.mentions(session_id)
        return {"mentions": [mention_to_wire(m) for m in mentions]}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.debug("ignoring notification _%s", method)

    # -- after the response ---------------------------------------------------------------

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


@contextmanager
def _mapped_errors(
    session_id: str | None = None, capabilities: ClientCapabilities | None = None
) -> Iterator[None]:
    """The session layer's errors as JSON-RPC errors."""
    try:
        yield
    except SessionNotFound as err:
        raise _not_found(session_id, err) from err
    except NoRuntime as err:
        raise auth_required(str(err), capabilities) from err
    except ConfigError as err:
        raise RequestError.invalid_params({"details": str(err)}) from err
    except (SessionBusy, NotRunning) as err:
        raise _refused(session_id, err) from err
    except RuntimeFailure as err:
        raise RequestError.invalid_request({"details": str(err)}) from err


def _meta_of(outcome: Outcome) -> dict[str, Any] | None:
    """`_meta.loopd.verification`: the turn's seal, for clients that show it (the
    short line is already in the transcript for those that do not)."""
    if outcome.verification is None:
        return None
    return {"loopd": {"verification": outcome.verification.to_wire()}}


def _options(view: SessionView) -> dict[str, Any]:
    """What every opening answer carries: the options, and the legacy views of the
    mode and model options."""
    options = view.config_options
    return {
        "modes": modes(options),
        "models": model_state(options),
        "config_options": config_options(options),
    }


def _refused(session_id: str | None, err: Exception) -> RequestError:
    """Invalid request: refused now, may work later. A session live in another
    process says so in the message itself, which is what editors show."""
    if isinstance(err, SessionHeld):
        data = {"sessionId": session_id, "pid": err.holder.pid, "details": str(err)}
        return RequestError(-32600, str(err), data)
    return RequestError.invalid_request({"details": str(err)})


def _not_found(session_id: str | None, err: Exception) -> RequestError:
    return RequestError(
        -32002, "Resource not found", {"sessionId": session_id, "details": str(err)}
    )


def _refusal(method: str, kind: str) -> Callable[..., Awaitable[None]]:
    async def refuse(self: LoopdAgent, *args: Any, **kwargs: Any) -> None:
        if kind == "request":
            raise RequestError.method_not_found(method)
        log.debug("ignoring notification %s", method)

    return refuse


def _refuse_the_rest() -> None:
    """Every route the SDK knows that `LoopdAgent` does not implement (the unstable
    ones: fork, providers, nes, document sync, mcp tunnelling) refuses explicitly,
    including routes a future SDK adds."""
    for attr, member in inspect.getmembers(Agent):
        route = getattr(member, "__route__", None)
        if route is not None and attr not in LoopdAgent.__dict__:
            setattr(LoopdAgent, attr, _refusal(route.method, route.kind))


_refuse_the_rest()
