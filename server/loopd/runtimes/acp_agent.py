"""Any ACP agent as a runtime (seed 001's adapter engine): loopd is its ACP client.

One child process per session, started when the session opens: `initialize`, then
`session/load` of the child's own session when it can (the child keeps the
conversation) or `session/new` with the session's folder and the editor's MCP
servers. Its updates become loopd events, so every editor shows them as it shows
native turns, and the session layer journals them.

The boundary stays loopd's:
- the child is put in its most careful mode (one that asks before acting), and each
  question it asks is decided by loopd's mode first (`decide`): a call naming a
  secret (`.env`, keys, credentials) is refused; reads inside the session's folders
  pass; edits pass in `accept_edits` and `full_auto`; whatever would ask is refused
  in `full_auto` and put to the person otherwise;
- its `fs/*` requests are served beneath the session's folders (secrets never read,
  protected paths never written); a write needs `accept_edits`/`full_auto` or a
  permission granted for that path in this turn;
- no `terminal/*` is offered: the child runs its commands itself, after asking.

A child that dies fails its turn with a message and a stop reason, like the Claude
and Codex runtimes; the next turn starts a new one (which loads its session).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast, get_args

from loopd.engine.ports import Emitter
from loopd.policy.modes import Mode, parse_mode
from loopd.policy.paths import PathIssue, PathPolicy
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.errors import ConfigError
from loopd.protocol.events import AgentMessageChunk, ConfigOption, Prompt
from loopd.protocol.turns import Outcome, StopReason
from loopd.runtimes.acp_wire import event_of, options_of, paths_of, prompt_blocks
from loopd.runtimes.base import RuntimeContext
from loopd.runtimes.options import DEFAULT_MODE, mode_option
from loopd.tools.files import BeneathFiles

if TYPE_CHECKING:  # the ACP SDK loads only when an ACP agent runs (`loopd lsp` never pays)
    from loopd.runtimes.acp_child import ChildConnection, Question

log = logging.getLogger(__name__)

CAREFUL_MODES = ("default", "ask", "manual", "read-only")  # the child's "ask first" modes
READ_KINDS = frozenset({"read", "search", "think"})
EDIT_KINDS = frozenset({"edit", "delete", "move"})


@dataclass(frozen=True, slots=True)
class AcpSettings:
    """How to start the agent: its command, arguments and added environment."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    base_env: Mapping[str, str] = field(default_factory=dict)


class AcpRuntimeFactory:
    def __init__(self, name: str, settings: AcpSettings) -> None:
        self.name = name
        self.settings = settings

    async def open(self, context: RuntimeContext) -> AcpRuntime:
        runtime = AcpRuntime(context, self.settings)
        await runtime.start()
        return runtime


def stop_reason(child: str) -> StopReason:
    """The child's stop reason; one loopd does not know ends the turn normally."""
    return cast(StopReason, child) if child in get_args(StopReason) else "end_turn"


def decide(mode: Mode, kind: str, paths: tuple[str, ...], inside: bool) -> str:
    """loopd's answer to a child's question before the person is asked:
    "allow", "deny" or "ask". Outside the session's folders always asks."""
    if kind in READ_KINDS and inside:
        return "allow"
    if kind in EDIT_KINDS and inside and paths and mode in (Mode.ACCEPT_EDITS, Mode.FULL_AUTO):
        return "allow"
    if mode is Mode.READ_ONLY and kind in EDIT_KINDS:
        return "deny"
    return "deny" if mode is Mode.FULL_AUTO else "ask"


class AcpRuntime:
    def __init__(self, context: RuntimeContext, settings: AcpSettings) -> None:
        self._ctx = context
        self._settings = settings
        self._mode = parse_mode(context.config.get("mode") or DEFAULT_MODE)
        self._child: ChildConnection | None = None
        self._child_session: str | None = context.state.get("childSession")
        self._child_options: tuple[ConfigOption, ...] = ()
        self._granted: set[str] = set()  # paths a permission allowed in this turn
        home = settings.base_env.get("HOME") or os.path.expanduser("~")
        roots = tuple(os.path.realpath(r) for r in context.roots)
        self._paths = PathPolicy(roots, home)
        self._files = BeneathFiles(self._paths)

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> None:
        from loopd.runtimes.acp_child import ChildConnection

        s = self._settings
        env = {**s.base_env, **s.env}
        child = await ChildConnection.spawn(
            s.command, s.args, env, self._ctx.cwd, self._on_update, self._on_question, self._files,
            self._may_write,
        )  # fmt: skip
        try:
            self._child_session, options = await child.open_session(
                self._ctx.cwd, self._ctx.mcp_servers, self._child_session
            )
        except BaseException:
            await child.close()
            raise
        self._child = child
        self._child_options = options
        await self._ask_first()

    async def _ask_first(self) -> None:
        """Put the child in its careful mode, so its questions come to loopd."""
        mode = next((o for o in self._child_options if o.category == "mode"), None)
        if mode is None or self._child is None:
            return
        careful = next((c.value for c in mode.choices if c.value in CAREFUL_MODES), None)
        if careful is not None and mode.current_value != careful:
            session = self._child_session or ""
            self._child_options = await self._child.set_option(session, mode.id, careful)

    async def close(self) -> None:
        if self._child is not None:
            child, self._child = self._child, None
            await child.close()

    def state(self) -> Mapping[str, Any]:
        return {"childSession": self._child_session} if self._child_session else {}

    # -- options ----------------------------------------------------------------------

    def config_options(self) -> tuple[ConfigOption, ...]:
        """loopd's mode, then the child's own options (its model, its effort...),
        except its mode: loopd's mode is the one that decides."""
        theirs = tuple(o for o in self._child_options if o.category != "mode")
        return (mode_option(self._mode.value), *theirs)

    async def set_config(self, option_id: str, value: str) -> None:
        if option_id == "mode":
            self._mode = parse_mode(value)
            return
        option = next((o for o in self._child_options if o.id == option_id), None)
        if option is None or value not in {c.value for c in option.choices}:
            raise ConfigError(f"{value!r} is not a choice of {option_id!r}")
        child = await self._running()
        self._child_options = await child.set_option(self._child_session or "", option_id, value)

    # -- turns --------------------------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> Outcome:
        turn_id = f"turn_{uuid.uuid4().hex[:12]}"
        self._granted.clear()
        try:
            child = await self._running()
            stop = await child.prompt(self._child_session or "", prompt_blocks(prompt))
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.warning("ACP agent turn failed", exc_info=True)
            await self._say(f"The agent failed: {err}")
            await self.close()  # the next turn starts it again
            return Outcome(turn_id, "refusal", error=str(err))
        return Outcome(turn_id, stop_reason(stop))

    async def cancel(self) -> None:
        if self._child is not None and self._child_session:
            await self._child.cancel(self._child_session)

    async def _running(self) -> ChildConnection:
        if self._child is None or not self._child.alive:
            with contextlib.suppress(Exception):
                await self.close()
            await self.start()
        assert self._child is not None
        return self._child

    async def _say(self, text: str) -> None:
        await self._emitter.emit(AgentMessageChunk(text, f"msg_{uuid.uuid4().hex[:12]}"))

    @property
    def _emitter(self) -> Emitter:
        return self._ctx.emitter

    # -- what the child sends ---------------------------------------------------------

    async def _on_update(self, update: Mapping[str, Any]) -> None:
        if update.get("sessionUpdate") == "config_option_update":
            self._child_options = tuple(options_of(update.get("configOptions") or ()))
        event = event_of(update)
        if event is not None:
            await self._emitter.emit(event)

    async def _on_question(self, question: Question) -> ApprovalDecision:
        """The child's permission request, decided by loopd's mode, then the person."""
        call = question.tool_call
        kind = str(call.get("kind") or "other")
        paths = paths_of(call, self._ctx.cwd)
        inside = all(self._paths.check_write(p).ok for p in paths)
        secret = any(self._paths.check_read(p).issue is PathIssue.SECRET for p in paths)
        match "deny" if secret else decide(self._mode, kind, paths, inside):
            case "allow":
                decision = ApprovalDecision.ALLOW_ONCE
            case "deny":
                decision = ApprovalDecision.REJECT_ONCE
            case _:
                decision = await self._ask_person(call, kind)
        if decision.allowed:
            self._granted.update(paths)
        return decision

    async def _ask_person(self, call: Mapping[str, Any], kind: str) -> ApprovalDecision:
        event = event_of({**call, "sessionUpdate": "tool_call"})
        request = ApprovalRequest(
            session_id=self._ctx.session_id,
            tool_call_id=str(call.get("toolCallId") or ""),
            tool_name=kind,
            title=str(call.get("title") or "the agent's tool call"),
            kind=kind,  # type: ignore[arg-type]
            raw_input=call.get("rawInput") or {},
            content=getattr(event, "content", ()),
            locations=getattr(event, "locations", ()),
        )
        try:
            return await self._ctx.approver.approve(request)
        except Exception:  # an approver that fails denies: fail closed
            log.exception("approver failed; denying")
            return ApprovalDecision.REJECT_ONCE

    def _may_write(self, path: str) -> bool:
        canonical = self._paths.canonical(path)
        return self._mode in (Mode.ACCEPT_EDITS, Mode.FULL_AUTO) or canonical in {
            self._paths.canonical(p) for p in self._granted
        }
