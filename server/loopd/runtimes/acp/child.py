"""The child agent's connection: its process, the ACP SDK's client side, and the
client methods loopd serves it.

`ChildConnection` hides the SDK from the runtime: requests go out as plain values,
updates and questions come back through two callbacks, files and terminals are
served by plain objects (`FileAccess`, `AcpTerminals`) whose refusals become JSON-RPC
errors here, and the process is watched so that a child that dies fails the request
it was serving instead of hanging it. Its stdout is read through `BoundedReader`:
a message longer than the bound stops the child, and fails that request too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AcpMcpServer,
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    HttpHeader,
    HttpMcpServer,
    Implementation,
    KillTerminalResponse,
    McpServerStdio,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    SseMcpServer,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from loopd import __version__
from loopd.groups import signal_group, stop_group
from loopd.mcp.config import McpServerConfig
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.errors import RuntimeFailure
from loopd.protocol.events import ConfigOption
from loopd.runtimes.acp.bounds import READ_CHUNK, BoundedReader
from loopd.runtimes.acp.terminals import AcpTerminals, TerminalRefused, UnknownTerminal
from loopd.runtimes.acp.wire import options_of
from loopd.tools.access import FileAccess

log = logging.getLogger(__name__)

CLOSE_GRACE = 2.0
REFUSED = -32600  # as loopd's own ACP agent refuses a request it will not serve


@dataclass(frozen=True, slots=True)
class Question:
    """A child's permission request: its tool call and its options, as JSON."""

    tool_call: Mapping[str, Any]
    options: Sequence[Mapping[str, Any]]


OnUpdate = Callable[[Mapping[str, Any]], Awaitable[None]]
OnQuestion = Callable[[Question], Awaitable[ApprovalDecision]]


class _Served:
    """What loopd answers the child (an `acp.Client` by shape: the SDK routes only
    the methods an object has, so everything else is method-not-found): updates and
    questions to the runtime, files beneath the session's folders, terminals run in
    the session's sandbox."""

    def __init__(
        self,
        on_update: OnUpdate,
        on_question: OnQuestion,
        files: FileAccess,
        may_write: Any,
        terminals: AcpTerminals,
    ) -> None:
        self.on_update, self.on_question = on_update, on_question
        self.files, self.may_write, self.terminals = files, may_write, terminals
        self.replaying = False  # a load replays what the session layer already has

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if not self.replaying:
            await self.on_update(update.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kw: Any
    ) -> RequestPermissionResponse:
        wire = [o.model_dump(mode="json", by_alias=True) for o in options]
        call = tool_call.model_dump(mode="json", by_alias=True, exclude_none=True)
        decision = await self.on_question(Question(call, wire))
        chosen = _option(wire, decision)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    async def read_text_file(
        self,
        path: str,
        session_id: str,
        limit: int | None = None,
        line: int | None = None,
        **kw: Any,
    ) -> ReadTextFileResponse:
        try:
            text = await self.files.read_text(path)
        except (OSError, ValueError) as err:
            raise RequestError.invalid_params({"path": path, "details": str(err)}) from err
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : start + limit if limit is not None else None])
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kw: Any
    ) -> WriteTextFileResponse | None:
        if not self.may_write(path):
            raise RequestError.invalid_params(
                {"path": path, "details": "not approved: ask permission for this edit first"}
            )
        try:
            await self.files.write_text(path, content)
        except (OSError, ValueError) as err:
            raise RequestError.invalid_params({"path": path, "details": str(err)}) from err
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        command: str,
        session_id: str,
        args: list[str] | None = None,
        cwd: str | None = None,
        env: list[EnvVariable] | None = None,
        output_byte_limit: int | None = None,
        **kw: Any,
    ) -> CreateTerminalResponse:
        variables = {v.name: v.value for v in env or ()}
        try:
            terminal_id = await self.terminals.create(
                command, args or (), variables, cwd, output_byte_limit
            )
        except TerminalRefused as err:
            detail = {"command": command, "args": args or [], "details": str(err)}
            raise RequestError(REFUSED, f"loopd refused the command: {err}", detail) from err
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kw: Any
    ) -> TerminalOutputResponse:
        with _held(terminal_id):
            snap = self.terminals.output(terminal_id)
        end = snap.exit
        status = None if end is None else TerminalExitStatus(exit_code=end.code, signal=end.signal)
        return TerminalOutputResponse(
            output=snap.output, truncated=snap.truncated, exit_status=status
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kw: Any
    ) -> WaitForTerminalExitResponse:
        with _held(terminal_id):
            done = await self.terminals.wait_for_exit(terminal_id)
        return WaitForTerminalExitResponse(exit_code=done.code, signal=done.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kw: Any
    ) -> KillTerminalResponse:
        with _held(terminal_id):
            await self.terminals.kill(terminal_id)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kw: Any
    ) -> ReleaseTerminalResponse:
        with _held(terminal_id):
            await self.terminals.release(terminal_id)
        return ReleaseTerminalResponse()


@contextlib.contextmanager
def _held(terminal_id: str) -> Iterator[None]:
    """An id loopd does not hold is invalid params."""
    try:
        yield
    except UnknownTerminal as err:
        details = "no such terminal (never created, or released)"
        raise RequestError.invalid_params({"terminalId": terminal_id, "details": details}) from err


def _option(options: Sequence[Mapping[str, Any]], decision: ApprovalDecision) -> str | None:
    """The child's option for the decision; an "always" it lacks counts once."""
    if decision is ApprovalDecision.CANCELLED:
        return None
    kinds = {
        ApprovalDecision.ALLOW_ALWAYS: ("allow_always", "allow_once"),
        ApprovalDecision.ALLOW_ONCE: ("allow_once",),
        ApprovalDecision.REJECT_ALWAYS: ("reject_always", "reject_once"),
        ApprovalDecision.REJECT_ONCE: ("reject_once", "reject_always"),
    }[decision]
    for kind in kinds:
        for o in options:
            if o.get("kind") == kind:
                return str(o["optionId"])
    return None


class ChildConnection:
    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        conn: ClientSideConnection,
        served: _Served,
        broken: list[str],
    ) -> None:
        self._proc, self._conn, self._served = proc, conn, served
        self._broken = broken  # why loopd stopped the child, once it did
        self.load_session = False

    @classmethod
    async def spawn(
        cls,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        on_update: OnUpdate,
        on_question: OnQuestion,
        files: FileAccess,
        may_write: Callable[[str], bool],
        terminals: AcpTerminals,
        message_bytes: int,
    ) -> ChildConnection:
        """Start the child and initialize it; `message_bytes` bounds each message. A
        start that fails leaves no child behind: it is stopped and reaped."""
        try:
            proc = await asyncio.create_subprocess_exec(
                command, *args, env=dict(env), cwd=cwd, limit=READ_CHUNK,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        except OSError as err:
            raise RuntimeFailure(f"cannot start the ACP agent {command!r}: {err}") from err
        served = _Served(on_update, on_question, files, may_write, terminals)
        assert proc.stdin is not None and proc.stdout is not None
        broken: list[str] = []

        def too_long(size: int) -> None:
            broken.append(f"the ACP agent sent a message of more than {message_bytes:,} bytes")
            _kill(proc)

        reader = BoundedReader(proc.stdout, message_bytes, too_long)
        conn = connect_to_agent(served, proc.stdin, reader)  # type: ignore[arg-type]
        child = cls(proc, conn, served, broken)
        try:
            await child._initialize()
        except BaseException:  # a child that shut its output may live on: stop, reap it
            await child.close()
            raise
        return child

    async def _initialize(self) -> None:
        caps = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
        )
        init = await self._watch(
            self._conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=caps,
                client_info=Implementation(name="loopd", title="loopd", version=__version__),
            )
        )
        self.load_session = bool(init.agent_capabilities and init.agent_capabilities.load_session)

    @property
    def alive(self) -> bool:
        return self._proc.returncode is None

    async def exited(self) -> None:
        """Returns when the child process has exited."""
        await self._proc.wait()

    async def open_session(
        self, cwd: str, servers: Sequence[McpServerConfig], existing: str | None
    ) -> tuple[str, tuple[ConfigOption, ...]]:
        """Load the child's session when it can, else start one."""
        mcp: list[HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio]
        mcp = [_mcp_server(s) for s in servers]
        if existing and self.load_session:
            self._served.replaying = True
            try:
                loaded = await self._watch(
                    self._conn.load_session(cwd=cwd, session_id=existing, mcp_servers=mcp)
                )
                return existing, tuple(options_of(_dump(loaded.config_options)))
            except RequestError:
                log.info("the agent could not load %s; starting a new session", existing)
            finally:
                self._served.replaying = False
        new = await self._watch(self._conn.new_session(cwd=cwd, mcp_servers=mcp))
        return new.session_id, tuple(options_of(_dump(new.config_options)))

    async def set_option(
        self, session: str, option_id: str, value: str
    ) -> tuple[ConfigOption, ...]:
        answer = await self._watch(
            self._conn.set_config_option(config_id=option_id, session_id=session, value=value)
        )
        return tuple(options_of(_dump(answer.config_options)))

    async def prompt(self, session: str, blocks: list[dict[str, Any]]) -> str:
        answer = await self._watch(self._conn.prompt(session_id=session, prompt=blocks))  # type: ignore[arg-type]
        return str(answer.stop_reason)

    async def cancel(self, session: str) -> None:
        with contextlib.suppress(Exception):
            await self._conn.cancel(session_id=session)

    def kill(self, why: str) -> None:
        """Stop the child at once (and what it started in its process group): the
        request it serves fails with `why`."""
        self._broken.append(why)
        _kill(self._proc)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._conn.close()
        await stop_group(self._proc, CLOSE_GRACE, eof_first=False)

    async def _watch(self, request: Awaitable[Any]) -> Any:
        """`request`'s answer, or `RuntimeFailure` if the child dies first."""
        answer = asyncio.ensure_future(request)
        died = asyncio.ensure_future(self._proc.wait())
        try:
            done, _ = await asyncio.wait({answer, died}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            died.cancel()
        if answer in done and not self._broken and not _closed(answer):
            return answer.result()
        if answer.done() and not answer.cancelled():
            answer.exception()  # retrieved: the child's end says why it failed
        answer.cancel()
        if self._broken:
            raise RuntimeFailure(self._broken[0])
        with contextlib.suppress(TimeoutError):  # its pipe may close before it is reaped
            await asyncio.wait_for(self._proc.wait(), CLOSE_GRACE)
        code = self._proc.returncode
        raise RuntimeFailure(
            f"the ACP agent exited (code {code})"
            if code is not None
            else "the ACP agent closed its connection"
        )


def _closed(answer: asyncio.Future[Any]) -> bool:
    """Whether `answer` failed because the child's connection closed (it exited, or
    shut its output), which is said as the child's end, not as a ConnectionError."""
    return not answer.cancelled() and isinstance(answer.exception(), ConnectionError | EOFError)


def _kill(proc: asyncio.subprocess.Process) -> None:
    signal_group(proc.pid, signal.SIGKILL)  # its own group (start_new_session)


def _dump(options: Any) -> list[dict[str, Any]]:
    return [o.model_dump(mode="json", by_alias=True) for o in options or ()]


def _mcp_server(server: McpServerConfig) -> HttpMcpServer | McpServerStdio:
    if server.url is not None:
        headers = [HttpHeader(name=k, value=v) for k, v in server.headers.items()]
        return HttpMcpServer(type="http", name=server.name, url=server.url, headers=headers)
    env = [EnvVariable(name=k, value=v) for k, v in server.env.items()]
    return McpServerStdio(
        name=server.name, command=server.command or "", args=list(server.args), env=env
    )
