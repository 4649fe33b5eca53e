"""Any ACP agent as a runtime (seed 001's adapter engine): loopd is its ACP client.

One child process per session, started when the session opens: `initialize`, then
`session/load` of the child's own session when it can (the child keeps the
conversation) or `session/new` with the session's folder and the editor's MCP
servers. Its updates become loopd events, so every editor shows them as it shows
native turns, and the session layer journals them.

The boundary stays loopd's:
- the child is put in its most careful mode (one that asks before acting), and each
  question it asks is decided by loopd's mode first (`modes.decide`): a call naming a
  secret (`.env`, keys, credentials) is refused; reads inside the session's folders
  pass; edits pass in `accept_edits` and `full_auto`; whatever would ask is refused
  in `full_auto` and put to the person otherwise;
- its `fs/*` requests are served beneath the session's folders (secrets never read,
  protected paths never written); a write needs `accept_edits`/`full_auto` or a
  permission granted for that path in this turn;
- its `terminal/*` requests run in the session's sandbox, after loopd's command
  policy decided them as it decides a native `bash` call (`gate`, `terminals`);
  a question about a command it runs itself is refused outright by a deny rule.

A child that dies fails its turn with a message and a stop reason, like the Claude
and Codex runtimes; the next turn starts a new one (which loads its session).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopd.config.trust.pins import Pins
from loopd.engine.ports import Emitter
from loopd.executables import find_program, program_env
from loopd.home import home_path
from loopd.policy.modes import Mode, parse_mode
from loopd.policy.paths import PathIssue, Unresolvable
from loopd.policy.rules import RuleSet
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.errors import ConfigError, RuntimeFailure
from loopd.protocol.events import AgentMessageChunk, ConfigOption, Prompt
from loopd.protocol.turns import Outcome, StopReason
from loopd.runtimes.acp.bounds import ChildBounds, TurnBounds
from loopd.runtimes.acp.gate import AcpGuard, command_of
from loopd.runtimes.acp.modes import CAREFUL_MODES, decide, stop_reason
from loopd.runtimes.acp.terminals import AcpTerminals
from loopd.runtimes.acp.wire import event_of, options_of, paths_of, prompt_blocks
from loopd.runtimes.base import RuntimeContext, refuse_moved
from loopd.runtimes.options import DEFAULT_MODE, mode_option
from loopd.sandbox.probe import NO_BOUNDARY, Boundary, SandboxProbe, probe_sandbox
from loopd.tools.env import SystemClock, ToolLimits
from loopd.tools.files import BeneathFiles

if TYPE_CHECKING:  # the ACP SDK loads only when an ACP agent runs (`loopd lsp` never pays)
    from loopd.runtimes.acp.child import ChildConnection, Question

log = logging.getLogger(__name__)


def _no_sandbox() -> SandboxProbe:
    return probe_sandbox(which=[])


@dataclass(frozen=True, slots=True)
class AcpSettings:
    """How to start the agent (its command, arguments and added environment) and the
    boundary its commands run in: loopd's rules, the sandbox's boundary and probe
    (called once a session opens; the default finds no sandbox, so every command that
    is not read-only asks), the output limits and the child's own bounds."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    base_env: Mapping[str, str] = field(default_factory=dict)
    rules: RuleSet = field(default_factory=RuleSet)
    boundary: Boundary = NO_BOUNDARY
    probe: Callable[[], SandboxProbe] = _no_sandbox
    limits: ToolLimits = field(default_factory=ToolLimits)
    bounds: ChildBounds = field(default_factory=ChildBounds)
    pins: Pins = ()  # what the trusted workspace file runs, as trusted


class AcpRuntimeFactory:
    def __init__(self, name: str, settings: AcpSettings) -> None:
        self.name = name
        self.settings = settings

    async def open(self, context: RuntimeContext) -> AcpRuntime:
        probe = await asyncio.to_thread(self.settings.probe)  # trial commands, once
        runtime = AcpRuntime(context, self.settings, probe)
        await runtime.start()
        return runtime


class AcpRuntime:
    def __init__(self, context: RuntimeContext, settings: AcpSettings, probe: SandboxProbe) -> None:
        self._ctx = context
        self._settings = settings
        self._mode = parse_mode(context.config.get("mode") or DEFAULT_MODE)
        self._child: ChildConnection | None = None
        self._child_session: str | None = context.state.get("childSession")
        self._child_options: tuple[ConfigOption, ...] = ()
        self._granted: set[str] = set()  # paths a permission allowed in this turn
        self._guard = AcpGuard.open(
            session_id=context.session_id,
            roots=tuple(os.path.realpath(r) for r in context.roots),
            mode=self._mode,
            approver=context.approver,
            emitter=context.emitter,
            rules=settings.rules,
            remembered=context.state.get("approvals") or {},
            boundary=settings.boundary,
            probe=probe,
            env=settings.base_env,
            home=home_path(settings.base_env),
        )
        self._paths = self._guard.policy.paths
        self._files = BeneathFiles(self._paths)
        self._terminals = self._new_terminals()
        self._watcher: asyncio.Task[None] | None = None
        # The latest turn's account: its updates, and those after it until the next
        # (the SDK may hand over a turn's last updates after its answer).
        self._account = TurnBounds(settings.bounds.update_bytes)
        self._turn: TurnBounds | None = None  # the running turn's
        self._graces: set[asyncio.Task[None]] = set()

    @property
    def bounds(self) -> ChildBounds:
        return self._settings.bounds

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> None:
        from loopd.runtimes.acp.child import ChildConnection

        s = self._settings
        refuse_moved(s.pins)
        env = program_env({**s.base_env, **s.env}, self._ctx.roots)
        command = find_program(s.command, env["PATH"], outside=self._ctx.roots)
        if command is None:
            raise RuntimeFailure(
                f"cannot start the ACP agent {s.command!r}: not found on PATH's absolute "
                "entries outside the workspace (it would run outside the sandbox)"
            )
        terminals = self._terminals = self._new_terminals()
        child = await ChildConnection.spawn(
            command, s.args, env, self._ctx.cwd, self._on_update, self._on_question, self._files,
            self._may_write, terminals, s.bounds.message_bytes,
        )  # fmt: skip
        try:
            self._child_session, options = await child.open_session(
                self._ctx.cwd, self._ctx.mcp_servers, self._child_session
            )
        except BaseException:
            await child.close()
            await terminals.aclose()
            raise
        self._child = child
        self._watcher = asyncio.create_task(self._on_exit(child, terminals))
        self._child_options = options
        await self._ask_first()

    def _new_terminals(self) -> AcpTerminals:
        """Terminals for one child process: they die with it."""
        return AcpTerminals(
            gate=self._guard,
            sandbox=lambda: self._guard.sandbox,
            paths=self._paths,
            base_env=self._settings.base_env,
            limits=self._settings.limits,
            clock=SystemClock(),
            emit=self._emitter.emit,
        )

    @staticmethod
    async def _on_exit(child: ChildConnection, terminals: AcpTerminals) -> None:
        """A child that exits (crashed, or closed) leaves no command running."""
        await child.exited()
        await terminals.aclose()

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
        await self._terminals.aclose()
        if self._watcher is not None:
            watcher, self._watcher = self._watcher, None
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    def state(self) -> Mapping[str, Any]:
        """The child's session to load, and the person's "always" answers."""
        child = {"childSession": self._child_session} if self._child_session else {}
        return child | {"approvals": dict(self._guard.remembered())}

    # -- options ----------------------------------------------------------------------

    def config_options(self) -> tuple[ConfigOption, ...]:
        """loopd's mode, then the child's own options (its model, its effort...),
        except its mode: loopd's mode is the one that decides."""
        theirs = tuple(o for o in self._child_options if o.category != "mode")
        return (mode_option(self._mode.value), *theirs)

    async def set_config(self, option_id: str, value: str) -> None:
        if option_id == "mode":
            self._mode = parse_mode(value)
            self._guard.set_mode(self._mode)
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
        self._guard.begin_turn()
        turn = self._turn = self._account = TurnBounds(self.bounds.update_bytes)
        try:
            child = await self._running()
            stop = await child.prompt(self._child_session or "", prompt_blocks(prompt))
        except asyncio.CancelledError:
            raise
        except Exception as err:
            if turn.stopped is None:
                log.warning("ACP agent turn failed", exc_info=True)
                await self._say(f"The agent failed: {err}")
            await self.close()  # the next turn starts it again
            return self._outcome(turn_id, turn, "refusal", str(err))
        finally:
            self._turn = None
            for grace in self._graces:
                grace.cancel()
        return self._outcome(turn_id, turn, stop_reason(stop), None)

    def _outcome(
        self, turn_id: str, turn: TurnBounds, stop: StopReason, err: str | None
    ) -> Outcome:
        """How the turn ended: as loopd stopped it, if it did (a cancel past its grace
        ends cancelled; a flood ends at its limit, saying so), else as it went."""
        match turn.stopped:
            case None:
                return Outcome(turn_id, stop, error=err)
            case "max_turn_requests":
                return Outcome(turn_id, turn.stopped, error=self._flooded())
            case stopped:
                return Outcome(turn_id, stopped)

    async def cancel(self) -> None:
        """Cancel the child's turn and stop every command its terminals run; a child
        still in the turn `cancel_grace` seconds later is killed."""
        await self._stop_turn("cancelled")
        await self._terminals.kill_all()

    async def _stop_turn(self, why: StopReason) -> None:
        child, turn = self._child, self._turn
        if child is None or not self._child_session:
            return
        await child.cancel(self._child_session)
        if turn is not None:
            grace = asyncio.create_task(self._expire(child, turn, why))
            self._graces.add(grace)
            grace.add_done_callback(self._graces.discard)

    async def _expire(self, child: ChildConnection, turn: TurnBounds, why: StopReason) -> None:
        await asyncio.sleep(self.bounds.cancel_grace)
        if self._turn is turn:
            turn.stopped = turn.stopped or why
            child.kill(f"the ACP agent kept its turn {self.bounds.cancel_grace:g} s after cancel")

    def _flooded(self) -> str:
        return (
            f"The agent sent more than {self.bounds.update_bytes:,} bytes of updates in one"
            " turn: loopd stopped the turn, and the rest was neither shown nor kept."
        )

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
        if not await self._within_budget(update):
            return
        if update.get("sessionUpdate") == "config_option_update":
            self._child_options = tuple(options_of(update.get("configOptions") or ()))
        event = event_of(update)
        if event is not None:
            await self._emitter.emit(self._terminals.shown(event))

    async def _within_budget(self, update: Mapping[str, Any]) -> bool:
        """Whether `update` may still be journaled and relayed; the first one past
        the turn's budget stops the turn (said once)."""
        turn = self._account
        if turn.take(len(json.dumps(update, separators=(",", ":")))):
            return True
        if turn.stopped is None:
            turn.stopped = "max_turn_requests"
            await self._say(self._flooded())
            await self._stop_turn("max_turn_requests")
        return False

    async def _on_question(self, question: Question) -> ApprovalDecision:
        """The child's permission request, decided by loopd's mode, then the person."""
        call = question.tool_call
        kind = str(call.get("kind") or "other")
        paths = paths_of(call, self._ctx.cwd)
        try:
            inside = all(self._paths.check_write(p).ok for p in paths)
            secret = any(self._paths.check_read(p).issue is PathIssue.SECRET for p in paths)
        except Unresolvable:  # a path swapped while it was judged: refused
            inside, secret = False, True
        command = command_of(call)
        refused = secret or (command is not None and self._guard.refuses(command) is not None)
        asked = False
        match "deny" if refused else decide(self._mode, kind, paths, inside):
            case "allow":
                decision = ApprovalDecision.ALLOW_ONCE
            case "deny":
                decision = ApprovalDecision.REJECT_ONCE
            case _:
                decision, asked = await self._ask_person(call, kind), True
        if command is not None:
            self._guard.heard(command, decision, asked=asked)
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
        try:
            canonical = self._paths.canonical(path)
            granted = {self._paths.canonical(p) for p in self._granted}
        except Unresolvable:
            return False
        return self._mode in (Mode.ACCEPT_EDITS, Mode.FULL_AUTO) or canonical in granted
