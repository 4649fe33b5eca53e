"""Claude Code as a loopd runtime: one long-lived `claude` process per session.

The process runs in stream-json mode on both pipes with partial messages and the
stdio permission prompt tool, so every permission question arrives as a
`can_use_tool` control request and goes to our Approver (research/foreign.md §1).
It is started on the first prompt, with `--resume=<id>` when the session layer
handed back a `state()` from an earlier run, and restarted the same way if it dies.

Nothing here may hang a turn: the process is watched for silence (`stall_timeout`),
for endless API retries (`max_api_retries`), and an interrupt that is not honoured
in `cancel_timeout` kills the process. Every failure becomes a visible message plus
a stop reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
import uuid
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.errors import ConfigError, RuntimeFailure
from loopd.protocol.events import AgentMessageChunk, ConfigOption, ModeChanged, Prompt
from loopd.protocol.model import Usage
from loopd.protocol.turns import Outcome
from loopd.runtimes import claude_events as ce
from loopd.runtimes.base import McpServerConfig, RuntimeContext
from loopd.runtimes.jsonl import JsonlProcess, wait_while_active
from loopd.runtimes.options import DEFAULT_MODE, check_mode, mode_option, model_option

log = logging.getLogger(__name__)

# Switches every other call home off (research §2.3): only the model endpoint remains.
_QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


@dataclass(frozen=True, slots=True)
class ClaudeSettings:
    """How to run the CLI. `binary` None: `claude` on PATH. `env` is added to the
    inherited environment (ANTHROPIC_BASE_URL, CLAUDE_CONFIG_DIR, ...)."""

    binary: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    default_model: str | None = None
    extra_args: tuple[str, ...] = ()
    stall_timeout: float = 300.0
    control_timeout: float = 10.0
    cancel_timeout: float = 10.0
    max_api_retries: int = 4


class ClaudeRuntimeFactory:
    name = "claude"

    def __init__(self, settings: ClaudeSettings | None = None) -> None:
        self.settings = settings or ClaudeSettings()

    async def open(self, context: RuntimeContext) -> ClaudeRuntime:
        return ClaudeRuntime(self.settings, context)


class ClaudeRuntime:
    def __init__(self, settings: ClaudeSettings, context: RuntimeContext) -> None:
        self._settings = settings
        self._ctx = context
        self._mode = check_mode(context.config.get("mode", DEFAULT_MODE))
        self._model = context.config.get("model") or settings.default_model
        self._resume_id: str | None = context.state.get("session_id")
        self._session_id = self._resume_id or str(uuid.uuid4())
        self._proc: JsonlProcess | None = None
        self._reader: asyncio.Task[None] | None = None
        self._translator = ce.ClaudeTranslator(context.cwd)
        self._ids = itertools.count(1)
        self._control: dict[str, asyncio.Future[Mapping[str, Any]]] = {}
        self._permissions: dict[str, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._turn: asyncio.Future[Mapping[str, Any]] | None = None
        self._activity = 0
        self._retries = 0
        self._cancelled = False
        self._failure: str | None = None
        self._lock = asyncio.Lock()

    # -- the Runtime contract -----------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> Outcome:
        async with self._lock:
            turn_id = str(uuid.uuid4())
            self._cancelled, self._retries, self._failure = False, 0, None
            try:
                await self._ensure_process()
                self._turn = asyncio.get_running_loop().create_future()
                assert self._proc is not None
                await self._proc.send(ce.user_message(prompt))
                result = await self._await_result(self._turn)
            except RuntimeFailure as exc:
                return await self._failed(turn_id, str(exc))
            finally:
                self._turn = None
            end = ce.turn_end(result, cancelled=self._cancelled)
            if self._failure is not None:
                end = ce.TurnEnd("end_turn", end.usage, self._failure, show=True)
            if end.error and end.show:
                await self._say(end.error)
            return Outcome(
                turn_id=turn_id,
                stop_reason=end.stop_reason,
                iterations=int(result.get("num_turns") or 0),
                usage=end.usage,
                context_tokens=self._translator.context_tokens,
                error=end.error,
            )

    async def cancel(self) -> None:
        turn = self._turn
        if turn is None or turn.done():
            return
        self._cancelled = True
        try:
            await self._control_request("interrupt")
        except RuntimeFailure as exc:
            log.info("claude interrupt failed: %s", exc)
        for task in list(self._permissions.values()):
            task.cancel()
        with contextlib.suppress(TimeoutError, RuntimeFailure):
            await asyncio.wait_for(asyncio.shield(turn), self._settings.cancel_timeout)
        if not turn.done():
            log.warning("claude ignored the interrupt; stopping the process")
            await self._stop_process()

    async def set_config(self, option_id: str, value: str) -> None:
        match option_id:
            case "mode":
                self._mode = check_mode(value)
                if self._alive:
                    await self._control_request(
                        "set_permission_mode", mode=ce.PERMISSION_MODES[self._mode]
                    )
            case "model":
                self._model = value
                if self._alive:
                    await self._control_request("set_model", model=value)
            case _:
                raise ConfigError(f"the claude runtime has no option {option_id!r}")

    def config_options(self) -> tuple[ConfigOption, ...]:
        options = [mode_option(self._mode)]
        if self._model:
            options.append(model_option(self._model, self._settings.models))
        return tuple(options)

    def state(self) -> Mapping[str, Any]:
        return {"session_id": self._resume_id} if self._resume_id else {}

    async def close(self) -> None:
        await self._stop_process()

    # -- the process --------------------------------------------------------------------

    @property
    def _alive(self) -> bool:
        return self._proc is not None and self._proc.alive

    async def _ensure_process(self) -> None:
        if self._alive:
            return
        await self._stop_process()
        binary = self._settings.binary or shutil.which("claude")
        if binary is None:
            raise RuntimeFailure(
                "Claude Code is not installed: no `claude` on PATH. Install it "
                "(npm install -g @anthropic-ai/claude-code) or configure its path."
            )
        self._proc = await JsonlProcess.spawn(
            self._argv(binary), cwd=self._ctx.cwd, env=self._env(), name="Claude Code"
        )
        self._reader = asyncio.create_task(self._read(self._proc))

    def _argv(self, binary: str) -> list[str]:
        argv = [binary, "-p", "--input-format", "stream-json", "--output-format", "stream-json"]
        argv += ["--verbose", "--include-partial-messages", "--permission-prompt-tool", "stdio"]
        argv += ["--permission-mode", ce.PERMISSION_MODES[self._mode]]
        if self._resume_id:
            argv.append(f"--resume={self._resume_id}")
        else:
            argv.append(f"--session-id={self._session_id}")
        if self._model:
            argv.append(f"--model={self._model}")
        for root in self._ctx.additional_roots:
            argv += ["--add-dir", root]
        if self._ctx.mcp_servers:
            argv += ["--mcp-config", json.dumps(mcp_config(self._ctx.mcp_servers))]
        return argv + list(self._settings.extra_args)

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "CLAUDECODE"}
        return env | _QUIET_ENV | dict(self._settings.env)

    async def _stop_process(self) -> None:
        proc, reader = self._proc, self._reader
        self._proc, self._reader = None, None
        for task in list(self._permissions.values()):
            task.cancel()
        if proc is not None:
            await proc.close(grace=self._settings.cancel_timeout / 3)
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        self._fail_pending(RuntimeFailure("Claude Code was stopped."))

    # -- reading stdout -----------------------------------------------------------------

    async def _read(self, proc: JsonlProcess) -> None:
        try:
            async for message in proc.messages():
                self._activity += 1
                await self._dispatch(message)
        except Exception:  # a bug here must end the turn, not hang it
            log.exception("claude reader failed")
        if proc is self._proc:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.close(), self._settings.cancel_timeout)
            self._fail_pending(RuntimeFailure(await proc.exit_report()))

    async def _dispatch(self, message: Mapping[str, Any]) -> None:
        match message.get("type"):
            case "control_response":
                self._control_answered(message.get("response") or {})
            case "control_request":
                self._control_requested(str(message.get("request_id")), message)
            case "control_cancel_request":
                task = self._permissions.pop(str(message.get("request_id")), None)
                if task is not None:
                    task.cancel()
            case _:
                await self._observe(message)

    async def _observe(self, message: Mapping[str, Any]) -> None:
        if message.get("type") == "system" and message.get("subtype") == "init":
            self._resume_id = self._translator.session_id = str(message.get("session_id"))
        mode_before = self._translator.permission_mode
        for event in self._translator.translate(message):
            await self._ctx.emitter.emit(event)
        mode = self._translator.permission_mode
        if mode != mode_before and mode is not None:
            await self._follow_mode(mode)
        if message.get("type") == "system" and message.get("subtype") == "api_retry":
            await self._count_retry(message)
        if message.get("type") == "result" and self._turn is not None and not self._turn.done():
            self._turn.set_result(message)

    async def _follow_mode(self, permission_mode: str) -> None:
        """The CLI changed mode itself ("always allow" with a setMode rule, plan exit)."""
        mode = ce.loopd_mode(permission_mode)
        if mode is not None and ce.PERMISSION_MODES[self._mode] != permission_mode:
            self._mode = mode
            await self._ctx.emitter.emit(ModeChanged(mode))

    async def _count_retry(self, message: Mapping[str, Any]) -> None:
        """Give up on a model API that keeps failing: interrupt, and let the interrupt's
        `result` end the turn with the failure (so no stale result outlives it)."""
        self._retries += 1
        if self._retries > self._settings.max_api_retries and self._failure is None:
            error = message.get("error") or "unknown error"
            self._failure = f"Claude Code cannot reach its model API ({error})."
            self._in_background(self._interrupt_quietly())

    async def _interrupt_quietly(self) -> None:
        try:
            await self._control_request("interrupt")
        except RuntimeFailure:
            await self._stop_process()

    # -- control protocol ---------------------------------------------------------------

    async def _control_request(self, subtype: str, **fields: Any) -> Mapping[str, Any]:
        proc = self._proc
        if proc is None or not proc.alive:
            raise RuntimeFailure("Claude Code is not running.")
        request_id = f"loopd_{next(self._ids)}"
        answer = asyncio.get_running_loop().create_future()
        self._control[request_id] = answer
        try:
            await proc.send(ce.control_request(request_id, subtype, **fields))
            return await asyncio.wait_for(answer, self._settings.control_timeout)
        except TimeoutError as exc:
            raise RuntimeFailure(f"Claude Code did not answer {subtype!r} in time.") from exc
        finally:
            self._control.pop(request_id, None)

    def _control_answered(self, response: Mapping[str, Any]) -> None:
        answer = self._control.get(str(response.get("request_id")))
        if answer is None or answer.done():
            return
        if response.get("subtype") == "error":
            answer.set_exception(RuntimeFailure(f"Claude Code: {response.get('error')}"))
        else:
            answer.set_result(response.get("response") or {})

    def _control_requested(self, request_id: str, message: Mapping[str, Any]) -> None:
        request = message.get("request") or {}
        if request.get("subtype") == "can_use_tool":
            task = asyncio.create_task(self._permission(request_id, request))
            self._permissions[request_id] = task
            task.add_done_callback(lambda _: self._permissions.pop(request_id, None))
        else:
            self._in_background(self._reply(ce.control_error(request_id, "not supported")))

    async def _permission(self, request_id: str, request: Mapping[str, Any]) -> None:
        """Ask the person; answer unless the CLI withdrew the question meanwhile (the
        task is cancelled then, which also withdraws the approver's dialog)."""
        if self._mode == "full_auto":
            decision = ApprovalDecision.ALLOW_ONCE
        else:
            question = ce.approval_request(self._ctx.session_id, request, self._ctx.cwd)
            try:
                decision = await self._ctx.approver.approve(question)
            except Exception:  # an approver that fails denies: fail closed
                log.exception("approver failed; denying")
                decision = ApprovalDecision.REJECT_ONCE
        await self._reply(ce.control_success(request_id, ce.permission_answer(decision, request)))

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _reply(self, message: Mapping[str, Any]) -> None:
        if self._proc is not None:
            with contextlib.suppress(RuntimeFailure):
                await self._proc.send(message)

    # -- waiting and failing ------------------------------------------------------------

    async def _await_result(self, turn: asyncio.Future[Mapping[str, Any]]) -> Mapping[str, Any]:
        try:
            return await wait_while_active(
                turn,
                activity=lambda: self._activity,
                waiting_on_person=lambda: bool(self._permissions),
                stall_timeout=self._settings.stall_timeout,
            )
        except TimeoutError:
            await self._stop_process()
            seconds = int(self._settings.stall_timeout)
            raise RuntimeFailure(f"Claude Code stopped responding for {seconds}s.") from None

    def _fail_pending(self, error: RuntimeFailure) -> None:
        for answer in self._control.values():
            if not answer.done():
                answer.set_exception(error)
        if self._turn is not None and not self._turn.done():
            if self._cancelled:
                self._turn.set_result({"type": "result", "subtype": "error_during_execution"})
            else:
                self._turn.set_exception(error)

    async def _failed(self, turn_id: str, error: str) -> Outcome:
        if self._cancelled:
            return Outcome(turn_id=turn_id, stop_reason="cancelled")
        await self._say(error)
        return Outcome(turn_id=turn_id, stop_reason="end_turn", usage=Usage(), error=error)

    async def _say(self, text: str) -> None:
        await self._ctx.emitter.emit(AgentMessageChunk(text, f"loopd-{uuid.uuid4()}"))


def mcp_config(servers: tuple[McpServerConfig, ...]) -> dict[str, Any]:
    """The `--mcp-config` JSON for the editor's MCP servers."""
    entries: dict[str, Any] = {}
    for s in servers:
        if s.url is not None:
            entries[s.name] = {"type": "http", "url": s.url, "headers": dict(s.headers)}
        else:
            entries[s.name] = {
                "type": "stdio",
                "command": s.command,
                "args": list(s.args),
                "env": dict(s.env),
            }
    return {"mcpServers": entries}
