"""Claude Code as a loopd runtime: one long-lived `claude` process per session.

The process runs in stream-json mode on both pipes with partial messages and the
stdio permission prompt tool, so every permission question arrives as a
`can_use_tool` control request and goes to our Approver (research/foreign.md §1).
It is started on the first prompt, with `--resume=<id>` when the session layer
handed back a `state()` from an earlier run, and restarted the same way if it dies.

The turn discipline (bounded waits, interrupt then stop, failures as messages) is
`loopd.runtimes.foreign.runtime`'s; this module is the CLI's own protocol: its flags, the
control requests, and the `api_retry` notices counted against `max_api_retries`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopd.config.schema import HARNESS_CLIS, Harness
from loopd.mcp.config import McpServerConfig
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.events import ModeChanged, Prompt
from loopd.protocol.turns import Outcome
from loopd.runtimes.base import RuntimeContext, SettingsFactory
from loopd.runtimes.foreign import claude_events as ce
from loopd.runtimes.foreign import claude_tools as ct
from loopd.runtimes.foreign.runtime import Cli, ForeignRuntime, ForeignSettings

# Switches every other call home off (research §2.3): only the model endpoint remains.
_QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


@dataclass(frozen=True, slots=True)
class ClaudeSettings(ForeignSettings):
    """`env` typically carries ANTHROPIC_BASE_URL, CLAUDE_CONFIG_DIR, ..."""

    control_timeout: float = 10.0
    max_api_retries: int = 4


class ClaudeRuntime(ForeignRuntime):
    CLI = Cli(*HARNESS_CLIS[Harness.CLAUDE])

    def __init__(self, settings: ClaudeSettings, context: RuntimeContext) -> None:
        super().__init__(settings, context)
        self._claude = settings
        self._resume_id: str | None = context.state.get("session_id")
        self._session_id = self._resume_id or str(uuid.uuid4())
        self._translator = ce.ClaudeTranslator(context.cwd)

    def state(self) -> Mapping[str, Any]:
        return {"session_id": self._resume_id} if self._resume_id else {}

    async def _apply(self, option_id: str) -> None:
        """Mode and model change in the running CLI; effort has no control request,
        so the CLI is restarted (resuming the conversation) on the next turn."""
        if not self._alive:
            return
        match option_id:
            case "mode":
                await self._control("set_permission_mode", mode=ce.PERMISSION_MODES[self._mode])
            case "model":
                await self._control("set_model", model=self._model)
            case "thought_level":
                self._stale = True

    # -- the process --------------------------------------------------------------------

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
        if self._effort_flag:
            argv.append(f"--effort={self._effort_flag}")
        for root in self._ctx.additional_roots:
            argv += ["--add-dir", root]
        if self._ctx.mcp_servers:
            argv += ["--mcp-config", json.dumps(mcp_config(self._ctx.mcp_servers))]
        return argv + list(self._settings.extra_args)

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in self._settings.inherited().items() if k != "CLAUDECODE"}
        return env | _QUIET_ENV | dict(self._settings.env)

    async def _begin(self, prompt: Prompt) -> None:
        assert self._proc is not None
        await self._proc.send(ce.user_message(prompt))

    async def _finish(self, turn_id: str, result: Mapping[str, Any]) -> Outcome:
        end = ce.turn_end(result, cancelled=self._cancelled)
        if self._failure is not None:
            end = ce.TurnEnd("end_turn", end.usage, self._failure, show=True)
        if end.error and end.show:
            await self._say(end.error, "error")
        return Outcome(
            turn_id=turn_id,
            stop_reason=end.stop_reason,
            iterations=int(result.get("num_turns") or 0),
            usage=end.usage,
            context_tokens=self._translator.context_tokens,
            error=end.error,
        )

    def _cancelled_result(self) -> Mapping[str, Any]:
        return {"type": "result", "subtype": "error_during_execution"}

    # -- reading stdout -----------------------------------------------------------------

    async def _dispatch(self, message: Mapping[str, Any]) -> None:
        match message.get("type"):
            case "control_response":
                response = message.get("response") or {}
                key = str(response.get("request_id"))
                if response.get("subtype") == "error":
                    self._answer(key, error=str(response.get("error")))
                else:
                    self._answer(key, response.get("response") or {})
            case "control_request":
                self._control_requested(str(message.get("request_id")), message)
            case "control_cancel_request":
                self._withdraw(str(message.get("request_id")))
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
            error = message.get("error") or "unknown error"
            failure = f"Claude Code cannot reach its model API ({error})."
            self._count_retry(self._claude.max_api_retries, failure)
        if message.get("type") == "result" and self._turn is not None and not self._turn.done():
            self._turn.set_result(message)

    async def _follow_mode(self, permission_mode: str) -> None:
        """The CLI changed mode itself ("always allow" with a setMode rule, plan exit)."""
        mode = ce.loopd_mode(permission_mode)
        if mode is not None and ce.PERMISSION_MODES[self._mode] != permission_mode:
            self._mode = mode
            await self._ctx.emitter.emit(ModeChanged(mode))

    # -- control protocol ---------------------------------------------------------------

    async def _control(self, subtype: str, **fields: Any) -> Mapping[str, Any]:
        request_id = f"loopd_{next(self._ids)}"
        message = ce.control_request(request_id, subtype, **fields)
        within = self._claude.control_timeout
        return await self._request(request_id, message, within=within, what=repr(subtype))

    async def _send_interrupt(self) -> None:
        await self._control("interrupt")

    def _control_requested(self, request_id: str, message: Mapping[str, Any]) -> None:
        request = message.get("request") or {}
        if request.get("subtype") == "can_use_tool":
            refused = ct.permission_answer(ApprovalDecision.REJECT_ONCE, request)
            refusal = ce.control_success(request_id, refused)
            self._ask_in_background(request_id, self._permission(request_id, request), refusal)
        else:
            self._in_background(self._send_quietly(ce.control_error(request_id, "not supported")))

    async def _permission(self, request_id: str, request: Mapping[str, Any]) -> None:
        """Ask the person; answer unless the CLI withdrew the question meanwhile (the
        task is cancelled then, which also withdraws the approver's dialog). In
        full_auto nobody is asked: what would ask is refused, as loopd's policy does."""
        if self._mode == "full_auto":
            answer = ct.refused_unasked(request, self._ctx.cwd)
        else:
            question = ct.approval_request(self._ctx.session_id, request, self._ctx.cwd)
            answer = ct.permission_answer(await self._ask_person(question), request)
        await self._send_quietly(ce.control_success(request_id, answer))


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


class ClaudeRuntimeFactory(SettingsFactory[ClaudeSettings, ClaudeRuntime]):
    def __init__(self, settings: ClaudeSettings | None = None) -> None:
        super().__init__("claude", ClaudeRuntime, settings or ClaudeSettings())
