"""Codex as a loopd runtime: `codex app-server` spoken over stdio, one per session.

app-server is the only Codex interface that hands approvals to the host (`exec`
refuses them; research/foreign.md §3). Framing is JSON-RPC without the "jsonrpc"
field, one object per line. The session's thread id is its `state()`: a runtime
reopened with it resumes the thread (`thread/resume`) in a fresh process.

Settings are passed with `-c` overrides (provider, analytics off, plugins off) so the
user's own `~/.codex/config.toml` is never written; `codex_home` moves Codex's state
elsewhere when set (tests do; it must not be under /tmp if the sandbox is wanted).

Hard timeouts everywhere: each request has `request_timeout`; a turn whose process
stays silent for `stall_timeout`, or whose model endpoint keeps failing
(`max_reconnects` retry notices; an unreachable endpoint otherwise retries forever),
is interrupted and reported; an interrupt not honoured in `cancel_timeout` kills
the process.
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
from loopd.protocol.events import (
    AgentMessageChunk,
    ConfigOption,
    EmbeddedResourceBlock,
    ImageBlock,
    Prompt,
    ResourceLinkBlock,
    TextBlock,
    ToolCallUpdated,
)
from loopd.protocol.turns import Outcome
from loopd.runtimes import codex_events as cx
from loopd.runtimes.base import McpServerConfig, RuntimeContext
from loopd.runtimes.jsonl import JsonlProcess, wait_while_active
from loopd.runtimes.options import DEFAULT_MODE, check_mode, mode_option, model_option

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CodexProvider:
    """A Responses-API endpoint given to codex as `model_providers.<id>`."""

    id: str
    base_url: str
    env_key: str
    name: str = "loopd"


@dataclass(frozen=True, slots=True)
class CodexSettings:
    binary: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    codex_home: str | None = None
    provider: CodexProvider | None = None
    overrides: tuple[str, ...] = ()  # extra `-c key=value` (TOML values)
    models: tuple[str, ...] = ()
    default_model: str | None = None
    request_timeout: float = 30.0
    stall_timeout: float = 300.0
    cancel_timeout: float = 10.0
    max_reconnects: int = 3


class CodexRuntimeFactory:
    name = "codex"

    def __init__(self, settings: CodexSettings | None = None) -> None:
        self.settings = settings or CodexSettings()

    async def open(self, context: RuntimeContext) -> CodexRuntime:
        return CodexRuntime(self.settings, context)


class CodexRuntime:
    def __init__(self, settings: CodexSettings, context: RuntimeContext) -> None:
        self._settings = settings
        self._ctx = context
        self._mode = check_mode(context.config.get("mode", DEFAULT_MODE))
        self._model = context.config.get("model") or settings.default_model
        self._thread_id: str | None = context.state.get("thread_id")
        self._proc: JsonlProcess | None = None
        self._reader: asyncio.Task[None] | None = None
        self._translator = cx.CodexTranslator(context.cwd)
        self._ids = itertools.count(1)
        self._calls: dict[int, asyncio.Future[Mapping[str, Any]]] = {}
        self._approvals: dict[Any, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._turn_id: str | None = None
        self._turn: asyncio.Future[Mapping[str, Any]] | None = None
        self._activity = 0
        self._reconnects = 0
        self._failure: str | None = None
        self._cancelled = False
        self._lock = asyncio.Lock()

    # -- the Runtime contract -----------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> Outcome:
        async with self._lock:
            turn_id = str(uuid.uuid4())
            self._cancelled, self._reconnects, self._failure = False, 0, None
            try:
                await self._ensure_thread()
                self._turn = asyncio.get_running_loop().create_future()
                started = await self._call("turn/start", self._turn_params(prompt))
                self._turn_id = str((started.get("turn") or {}).get("id"))
                turn = await self._await_turn(self._turn)
            except RuntimeFailure as exc:
                return await self._failed(turn_id, str(exc))
            finally:
                self._turn, self._turn_id = None, None
            stop, error = cx.turn_end(turn)
            error = self._failure or error
            if error is not None:
                stop = "end_turn"
                await self._say(error)
            usage = self._translator.usage
            return Outcome(
                turn_id, stop, usage=usage, context_tokens=usage.context_tokens, error=error
            )

    async def cancel(self) -> None:
        turn = self._turn
        if turn is None or turn.done():
            return
        self._cancelled = True
        await self._interrupt()
        for task in list(self._approvals.values()):
            task.cancel()
        with contextlib.suppress(TimeoutError, RuntimeFailure):
            await asyncio.wait_for(asyncio.shield(turn), self._settings.cancel_timeout)
        if not turn.done():
            log.warning("codex ignored the interrupt; stopping the process")
            await self._stop_process()

    async def set_config(self, option_id: str, value: str) -> None:
        """Takes effect from the next turn: turn/start carries policy and model."""
        match option_id:
            case "mode":
                self._mode = check_mode(value)
            case "model":
                self._model = value
            case _:
                raise ConfigError(f"the codex runtime has no option {option_id!r}")

    def config_options(self) -> tuple[ConfigOption, ...]:
        options = [mode_option(self._mode)]
        if self._model:
            options.append(model_option(self._model, self._settings.models))
        return tuple(options)

    def state(self) -> Mapping[str, Any]:
        return {"thread_id": self._thread_id} if self._thread_id else {}

    async def close(self) -> None:
        await self._stop_process()

    # -- process and thread -------------------------------------------------------------

    async def _ensure_thread(self) -> None:
        if self._proc is not None and self._proc.alive:
            return
        await self._stop_process()
        binary = self._settings.binary or shutil.which("codex")
        if binary is None:
            raise RuntimeFailure(
                "Codex is not installed: no `codex` on PATH. Install it "
                "(npm install -g @openai/codex) or configure its path."
            )
        self._proc = await JsonlProcess.spawn(
            [binary, "app-server", *self._flags()], cwd=self._ctx.cwd, env=self._env(), name="Codex"
        )
        self._reader = asyncio.create_task(self._read(self._proc))
        client = {"name": "loopd", "title": "loopd", "version": "0.1.0"}
        await self._call("initialize", {"clientInfo": client, "capabilities": None})
        await self._notify("initialized")
        policy = cx.POLICIES[self._mode]
        if self._thread_id:
            params = {"threadId": self._thread_id, "excludeTurns": True}
            result = await self._call("thread/resume", params)
        else:
            params = {"cwd": self._ctx.cwd, "approvalPolicy": policy.approval}
            params |= {"sandbox": policy.sandbox, "model": self._model}
            result = await self._call("thread/start", _drop_none(params))
        self._thread_id = str((result.get("thread") or {}).get("id"))

    def _flags(self) -> list[str]:
        overrides = ["analytics.enabled=false", *mcp_overrides(self._ctx.mcp_servers)]
        provider = self._settings.provider
        if provider is not None:
            table = {
                "name": provider.name,
                "base_url": provider.base_url,
                "env_key": provider.env_key,
            }
            overrides.append(f"model_provider={_toml(provider.id)}")
            overrides.append(
                f"model_providers.{provider.id}={_toml_table(table, wire_api='responses')}"
            )
        overrides += self._settings.overrides
        return [arg for o in overrides for arg in ("-c", o)] + ["--disable", "plugins"]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ) | dict(self._settings.env)
        if self._settings.codex_home:
            os.makedirs(self._settings.codex_home, exist_ok=True)
            env["CODEX_HOME"] = self._settings.codex_home
        return env

    def _turn_params(self, prompt: Prompt) -> dict[str, Any]:
        policy = cx.POLICIES[self._mode]
        params = {
            "threadId": self._thread_id,
            "input": user_input(prompt),
            "approvalPolicy": policy.approval,
            "sandboxPolicy": cx.sandbox_policy(policy.sandbox, self._ctx.additional_roots),
            "model": self._model,
        }
        return _drop_none(params)

    async def _stop_process(self) -> None:
        proc, reader = self._proc, self._reader
        self._proc, self._reader = None, None
        for task in list(self._approvals.values()):
            task.cancel()
        if proc is not None:
            await proc.close(grace=self._settings.cancel_timeout / 3)
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        self._fail_pending(RuntimeFailure("Codex was stopped."))

    # -- JSON-RPC -----------------------------------------------------------------------

    async def _call(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        proc = self._proc
        if proc is None or not proc.alive:
            raise RuntimeFailure("Codex is not running.")
        call_id = next(self._ids)
        answer = asyncio.get_running_loop().create_future()
        self._calls[call_id] = answer
        try:
            await proc.send({"id": call_id, "method": method, "params": dict(params)})
            return await asyncio.wait_for(answer, self._settings.request_timeout)
        except TimeoutError as exc:
            raise RuntimeFailure(f"Codex did not answer {method} in time.") from exc
        finally:
            self._calls.pop(call_id, None)

    async def _notify(self, method: str) -> None:
        if self._proc is not None:
            await self._proc.send({"method": method})

    async def _read(self, proc: JsonlProcess) -> None:
        try:
            async for message in proc.messages():
                self._activity += 1
                await self._dispatch(message)
        except Exception:  # a bug here must end the turn, not hang it
            log.exception("codex reader failed")
        if proc is self._proc:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.close(), self._settings.cancel_timeout)
            self._fail_pending(RuntimeFailure(await proc.exit_report()))

    async def _dispatch(self, message: Mapping[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if method is None:
            self._answered(message)
        elif "id" in message:
            self._requested(message["id"], str(method), params)
        else:
            await self._notified(str(method), params)

    def _answered(self, message: Mapping[str, Any]) -> None:
        answer = self._calls.get(message.get("id", -1))
        if answer is None or answer.done():
            return
        if "error" in message:
            error = (message.get("error") or {}).get("message", "error")
            answer.set_exception(RuntimeFailure(f"Codex: {error}"))
        else:
            answer.set_result(message.get("result") or {})

    async def _notified(self, method: str, params: Mapping[str, Any]) -> None:
        for event in self._translator.translate(method, params):
            await self._ctx.emitter.emit(event)
        match method:
            case "serverRequest/resolved":
                task = self._approvals.pop(params.get("requestId"), None)
                if task is not None:
                    task.cancel()
            case "error":
                self._model_error(params)
            case "turn/completed":
                turn = params.get("turn") or {}
                if self._turn is not None and not self._turn.done():
                    self._turn.set_result(turn)

    def _model_error(self, params: Mapping[str, Any]) -> None:
        """Retry notices are harmless until there are too many: an unreachable endpoint
        would otherwise retry forever. A final error is kept for the turn's message."""
        error = params.get("error") or {}
        detail = error.get("additionalDetails") or error.get("message") or "unknown error"
        if not params.get("willRetry"):
            self._failure = f"Codex: {error.get('message') or detail}"
            return
        self._reconnects += 1
        if self._reconnects > self._settings.max_reconnects and self._failure is None:
            self._failure = f"Codex cannot reach its model API ({detail})."
            self._in_background(self._interrupt())

    # -- approvals ----------------------------------------------------------------------

    def _requested(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        if method in cx.APPROVAL_METHODS:
            task = asyncio.create_task(self._approve(request_id, method, params))
            self._approvals[request_id] = task
            task.add_done_callback(lambda _: self._approvals.pop(request_id, None))
        else:
            error = {"code": -32601, "message": f"loopd does not support {method}"}
            self._in_background(self._send({"id": request_id, "error": error}))

    async def _approve(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        """Ask the person and answer with one of the decisions the server offered. The
        task is cancelled (withdrawing the dialog) when the server resolves it first."""
        item_id = str(params.get("itemId", ""))
        if self._mode == "full_auto":
            decision = ApprovalDecision.ALLOW_ONCE
        else:
            item = self._translator.items.get(item_id)
            question = cx.approval_request(
                self._ctx.session_id, method, params, item, self._ctx.cwd
            )
            await self._ctx.emitter.emit(ToolCallUpdated(item_id, status="pending"))
            try:
                decision = await self._ctx.approver.approve(question)
            except Exception:  # an approver that fails denies: fail closed
                log.exception("approver failed; denying")
                decision = ApprovalDecision.REJECT_ONCE
            if decision.allowed:
                await self._ctx.emitter.emit(ToolCallUpdated(item_id, status="in_progress"))
        answer = cx.codex_decision(decision, params.get("availableDecisions"))
        await self._send({"id": request_id, "result": {"decision": answer}})

    async def _send(self, message: Mapping[str, Any]) -> None:
        if self._proc is not None:
            with contextlib.suppress(RuntimeFailure):
                await self._proc.send(message)

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- waiting and failing ------------------------------------------------------------

    async def _interrupt(self) -> None:
        if self._thread_id is None or self._turn_id is None:
            return
        params = {"threadId": self._thread_id, "turnId": self._turn_id}
        try:
            await self._call("turn/interrupt", params)
        except RuntimeFailure as exc:
            log.info("codex interrupt failed: %s", exc)
            await self._stop_process()

    async def _await_turn(self, turn: asyncio.Future[Mapping[str, Any]]) -> Mapping[str, Any]:
        try:
            return await wait_while_active(
                turn,
                activity=lambda: self._activity,
                waiting_on_person=lambda: bool(self._approvals),
                stall_timeout=self._settings.stall_timeout,
            )
        except TimeoutError:
            await self._stop_process()
            seconds = int(self._settings.stall_timeout)
            raise RuntimeFailure(f"Codex stopped responding for {seconds}s.") from None

    def _fail_pending(self, error: RuntimeFailure) -> None:
        for answer in self._calls.values():
            if not answer.done():
                answer.set_exception(error)
        if self._turn is not None and not self._turn.done():
            if self._cancelled:
                self._turn.set_result({"status": "interrupted"})
            else:
                self._turn.set_exception(error)

    async def _failed(self, turn_id: str, error: str) -> Outcome:
        if self._cancelled:
            return Outcome(turn_id=turn_id, stop_reason="cancelled")
        await self._say(error)
        return Outcome(turn_id=turn_id, stop_reason="end_turn", error=error)

    async def _say(self, text: str) -> None:
        await self._ctx.emitter.emit(AgentMessageChunk(text, f"loopd-{uuid.uuid4()}"))


def user_input(prompt: Prompt) -> list[dict[str, Any]]:
    """turn/start `input`: text blocks as text, images as data URLs, resources inline."""
    items: list[dict[str, Any]] = []
    for block in prompt.blocks:
        match block:
            case TextBlock(text):
                items.append({"type": "text", "text": text, "text_elements": []})
            case ImageBlock(data, mime_type, _):
                items.append({"type": "image", "url": f"data:{mime_type};base64,{data}"})
            case EmbeddedResourceBlock(uri, text, _):
                wrapped = f'<context ref="{uri}">\n{text}\n</context>'
                items.append({"type": "text", "text": wrapped, "text_elements": []})
            case ResourceLinkBlock(uri, name, _):
                items.append({"type": "text", "text": f"@{uri} ({name})", "text_elements": []})
    return items


def mcp_overrides(servers: tuple[McpServerConfig, ...]) -> list[str]:
    """`-c mcp_servers.<name>=...` for the editor's MCP servers."""
    out = []
    for s in servers:
        if s.url is not None:
            table = _toml_table({"url": s.url}, http_headers=dict(s.headers))
        else:
            table = _toml_table({"command": s.command or ""}, args=list(s.args), env=dict(s.env))
        out.append(f"mcp_servers.{_toml_key(s.name)}={table}")
    return out


def _toml(value: Any) -> str:
    """A TOML value: JSON strings and arrays are valid TOML; tables are inline."""
    if isinstance(value, dict):
        return _toml_table(value)
    return json.dumps(value)


def _toml_table(values: Mapping[str, Any], **more: Any) -> str:
    pairs = {**values, **more}
    return "{" + ",".join(f"{_toml_key(k)}={_toml(v)}" for k, v in pairs.items()) + "}"


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}
