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

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopd.config.schema import HARNESS_CLIS, Harness
from loopd.mcp.config import McpServerConfig
from loopd.protocol import events
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.turns import Outcome
from loopd.runtimes.base import RuntimeContext, SettingsFactory
from loopd.runtimes.foreign import codex_events as cx
from loopd.runtimes.foreign.runtime import Cli, ForeignRuntime, ForeignSettings


@dataclass(frozen=True, slots=True)
class CodexProvider:
    """A Responses-API endpoint given to codex as `model_providers.<id>`."""

    id: str
    base_url: str
    env_key: str
    name: str = "loopd"


@dataclass(frozen=True, slots=True)
class CodexSettings(ForeignSettings):
    codex_home: str | None = None
    provider: CodexProvider | None = None
    overrides: tuple[str, ...] = ()  # extra `-c key=value` (TOML values)
    request_timeout: float = 30.0
    max_reconnects: int = 3


class CodexRuntime(ForeignRuntime):
    """Mode, model and effort need no message: every turn/start carries them."""

    CLI = Cli(*HARNESS_CLIS[Harness.CODEX])

    def __init__(self, settings: CodexSettings, context: RuntimeContext) -> None:
        super().__init__(settings, context)
        self._codex = settings
        self._thread_id: str | None = context.state.get("thread_id")
        self._translator = cx.CodexTranslator(context.cwd)
        self._turn_id: str | None = None

    def state(self) -> Mapping[str, Any]:
        return {"thread_id": self._thread_id} if self._thread_id else {}

    # -- process and thread -------------------------------------------------------------

    def _argv(self, binary: str) -> list[str]:
        overrides = ["analytics.enabled=false", *mcp_overrides(self._ctx.mcp_servers)]
        provider = self._codex.provider
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
        overrides += self._codex.overrides
        flags = [arg for o in overrides for arg in ("-c", o)] + ["--disable", "plugins"]
        return [binary, "app-server", *flags, *self._settings.extra_args]

    def _env(self) -> dict[str, str]:
        env = self._settings.inherited() | dict(self._settings.env)
        if self._codex.codex_home:
            os.makedirs(self._codex.codex_home, exist_ok=True)
            env["CODEX_HOME"] = self._codex.codex_home
        return env

    async def _started(self) -> None:
        """The handshake, then the thread: resumed when there is one, else started."""
        client = {"name": "loopd", "title": "loopd", "version": "0.1.0"}
        await self._call("initialize", {"clientInfo": client, "capabilities": None})
        assert self._proc is not None
        await self._proc.send({"method": "initialized"})
        policy = cx.POLICIES[self._mode]
        if self._thread_id:
            params = {"threadId": self._thread_id, "excludeTurns": True}
            result = await self._call("thread/resume", params)
        else:
            params = {"cwd": self._ctx.cwd, "approvalPolicy": policy.approval}
            params |= {"sandbox": policy.sandbox, "model": self._model}
            result = await self._call("thread/start", _drop_none(params))
        self._thread_id = str((result.get("thread") or {}).get("id"))

    async def _begin(self, prompt: events.Prompt) -> None:
        policy = cx.POLICIES[self._mode]
        params = {
            "threadId": self._thread_id,
            "input": user_input(prompt),
            "approvalPolicy": policy.approval,
            "sandboxPolicy": cx.sandbox_policy(policy.sandbox, self._ctx.additional_roots),
            "model": self._model,
            "effort": self._effort_flag,
        }
        self._turn_id = None
        started = await self._call("turn/start", _drop_none(params))
        self._turn_id = str((started.get("turn") or {}).get("id"))

    async def _finish(self, turn_id: str, result: Mapping[str, Any]) -> Outcome:
        stop, error = cx.turn_end(result)
        error = self._failure or error
        if error is not None:
            stop = "end_turn"
            await self._say(error, "error")
        usage = self._translator.usage
        return Outcome(turn_id, stop, usage=usage, context_tokens=usage.context_tokens, error=error)

    def _cancelled_result(self) -> Mapping[str, Any]:
        return {"status": "interrupted"}

    async def _send_interrupt(self) -> None:
        if self._thread_id is None or self._turn_id is None or self._turn is None:
            return
        await self._call("turn/interrupt", {"threadId": self._thread_id, "turnId": self._turn_id})

    # -- JSON-RPC -----------------------------------------------------------------------

    async def _call(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        call_id = next(self._ids)
        message = {"id": call_id, "method": method, "params": dict(params)}
        within = self._codex.request_timeout
        return await self._request(call_id, message, within=within, what=method)

    async def _dispatch(self, message: Mapping[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if method is None:
            key = message.get("id", -1)
            if "error" in message:
                self._answer(key, error=(message.get("error") or {}).get("message", "error"))
            else:
                self._answer(key, message.get("result") or {})
        elif "id" in message:
            self._requested(message["id"], str(method), params)
        else:
            await self._notified(str(method), params)

    async def _notified(self, method: str, params: Mapping[str, Any]) -> None:
        for event in self._translator.translate(method, params):
            await self._ctx.emitter.emit(event)
        match method:
            case "serverRequest/resolved":
                self._withdraw(params.get("requestId"))
            case "error":
                self._model_error(params)
            case "turn/completed":
                turn = params.get("turn") or {}
                if self._turn is not None and not self._turn.done():
                    self._turn.set_result(turn)

    def _model_error(self, params: Mapping[str, Any]) -> None:
        """A final error is kept for the turn's message; retry notices are counted (an
        unreachable endpoint is otherwise retried forever)."""
        error = params.get("error") or {}
        detail = error.get("additionalDetails") or error.get("message") or "unknown error"
        if not params.get("willRetry"):
            self._failure = f"Codex: {error.get('message') or detail}"
            return
        failure = f"Codex cannot reach its model API ({detail})."
        self._count_retry(self._codex.max_reconnects, failure)

    # -- approvals ----------------------------------------------------------------------

    def _requested(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        if method in cx.APPROVAL_METHODS:
            refused = cx.codex_decision(
                ApprovalDecision.REJECT_ONCE, params.get("availableDecisions")
            )
            refusal = {"id": request_id, "result": {"decision": refused}}
            self._ask_in_background(request_id, self._approve(request_id, method, params), refusal)
        else:
            error = {"code": -32601, "message": f"loopd does not support {method}"}
            self._in_background(self._send_quietly({"id": request_id, "error": error}))

    async def _approve(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        """Ask the person and answer with one of the decisions the server offered. The
        task is cancelled (withdrawing the dialog) when the server resolves it first."""
        item_id = str(params.get("itemId", ""))
        if self._mode == "full_auto":  # `never` asks nothing; should it, refuse unasked
            decision = ApprovalDecision.REJECT_ONCE
        else:
            item = self._translator.items.get(item_id)
            question = cx.approval_request(
                self._ctx.session_id, method, params, item, self._ctx.cwd
            )
            await self._ctx.emitter.emit(events.ToolCallUpdated(item_id, status="pending"))
            decision = await self._ask_person(question)
            if decision.allowed:
                await self._ctx.emitter.emit(events.ToolCallUpdated(item_id, status="in_progress"))
        answer = cx.codex_decision(decision, params.get("availableDecisions"))
        await self._send_quietly({"id": request_id, "result": {"decision": answer}})


def user_input(prompt: events.Prompt) -> list[dict[str, Any]]:
    """turn/start `input`: text blocks as text, images as data URLs, resources inline."""
    items: list[dict[str, Any]] = []
    for block in prompt.blocks:
        match block:
            case events.TextBlock(text):
                items.append({"type": "text", "text": text, "text_elements": []})
            case events.ImageBlock(data, mime_type, _):
                items.append({"type": "image", "url": f"data:{mime_type};base64,{data}"})
            case events.EmbeddedResourceBlock(uri, text, _):
                wrapped = f'<context ref="{uri}">\n{text}\n</context>'
                items.append({"type": "text", "text": wrapped, "text_elements": []})
            case events.ResourceLinkBlock(uri, name, _):
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


class CodexRuntimeFactory(SettingsFactory[CodexSettings, CodexRuntime]):
    def __init__(self, settings: CodexSettings | None = None) -> None:
        super().__init__("codex", CodexRuntime, settings or CodexSettings())
