"""A child ACP agent's commands under loopd's command policy: the same `RulePolicy`
and sandbox a native session's `bash` tool runs under, over the session's roots,
mode, configured rules and "always" answers.

Two ways a child runs a command, two uses:
- it asks (`session/request_permission`) and runs it itself: a deny rule or a
  remembered "reject always" refuses the question without asking (`refuses`), and
  the person's answer is remembered as it would be for a native call (`heard`);
- it runs it in a terminal loopd serves (`terminal/create`): `admit` decides the
  line exactly as a native `bash` call: deny refuses, allow runs, ask puts it to
  the person, unless the child's own question about this exact command was allowed
  in this turn (the person is not asked twice; each such answer admits one run).
  No answer, a rejection or a failing approver refuses: nothing runs.

A terminal always runs in the sandbox with the network off: a child cannot declare
the escalations a native call can (`"network": true`, `"sandbox": false`).
"""

from __future__ import annotations

import logging
import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopd.engine.ports import Approver, Declaration, Emitter, ToolCall, Verdict
from loopd.policy.decide import RulePolicy
from loopd.policy.modes import Mode
from loopd.policy.network import NetworkGrant
from loopd.policy.rules import RuleSet
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import TextBlock, ToolCallStarted, ToolCallUpdated
from loopd.runtimes.acp.terminals import TerminalRefused
from loopd.sandbox.base import CommandSandbox
from loopd.sandbox.probe import Boundary, SandboxProbe

log = logging.getLogger(__name__)
TOOL = "bash"  # rules and "always" answers speak of a command as of a bash call


def command_of(tool_call: Mapping[str, Any]) -> str | None:
    """The command line a child's tool call names in its raw input, if any."""
    raw = tool_call.get("rawInput")
    command = raw.get("command") if isinstance(raw, Mapping) else None
    if isinstance(command, str) and command.strip():
        return command
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        return shlex.join(command)
    return None


@dataclass(eq=False)
class AcpGuard:
    """The session's command policy and sandbox for its child agent."""

    policy: RulePolicy
    approver: Approver
    emitter: Emitter
    session_id: str
    sandbox: CommandSandbox
    _boundary: Boundary
    _probe: SandboxProbe
    _grant: NetworkGrant
    _env: Mapping[str, str]
    _approved: Counter[str] = field(default_factory=Counter)

    @classmethod
    def open(
        cls,
        *,
        session_id: str,
        roots: Sequence[str],
        mode: Mode,
        approver: Approver,
        emitter: Emitter,
        rules: RuleSet,
        remembered: Mapping[str, Any],
        boundary: Boundary,
        probe: SandboxProbe,
        env: Mapping[str, str],
        home: str,
    ) -> AcpGuard:
        grant = NetworkGrant()
        policy = RulePolicy(
            mode=mode,
            roots=roots,
            tier=probe.best,
            network=grant,
            rules=rules,
            remembered=RuleSet.from_json(remembered),
            home=home,
            extra_secrets=boundary.private,
        )
        sandbox = boundary.sandbox(mode, probe, tuple(policy.paths.roots), grant, env)
        return cls(policy, approver, emitter, session_id, sandbox, boundary, probe, grant, env)

    def set_mode(self, mode: Mode) -> None:
        self.policy.mode = mode
        roots = tuple(self.policy.paths.roots)
        self.sandbox = self._boundary.sandbox(mode, self._probe, roots, self._grant, self._env)

    def remembered(self) -> Mapping[str, Any]:
        return self.policy.remembered.to_json()

    def begin_turn(self) -> None:
        """A turn's answers admit runs in that turn only."""
        self._approved.clear()

    # -- the child's questions ------------------------------------------------------------

    def refuses(self, command: str) -> str | None:
        """Why loopd refuses a question about `command` without asking, or None."""
        call, declaration = _call(f"question:{command}", command)
        decision = self.policy.decide(call, declaration)
        return decision.reason if decision.verdict is Verdict.DENY else None

    def heard(self, command: str, answer: ApprovalDecision, *, asked: bool) -> None:
        """An answer to the child's question about `command`. Only the person's
        counts: it is remembered like a native call's ("always"), and an allow
        admits one run. loopd's own answer does not: it allows a question by the
        kind the child claims (a "read"), which proves nothing about the command."""
        if not asked:
            return
        call, declaration = _call(f"question:{command}", command)
        self.policy.remember(call, declaration, answer)
        if answer.allowed:
            self._approved[command] += 1

    # -- terminals --------------------------------------------------------------------------

    async def admit(self, line: str, cwd: str, card: str) -> bool:
        """`TerminalGate.admit`: the policy's verdict on `line`, and the person's
        answer when it asks, shown as tool call `card`."""
        call, declaration = _call(card, line)
        decision = self.policy.decide(call, declaration)
        match decision.verdict:
            case Verdict.DENY:
                raise TerminalRefused(f"denied by loopd's policy: {decision.reason}")
            case Verdict.ALLOW:
                return False
            case Verdict.ASK:
                if self._approved[line] > 0:
                    self._approved[line] -= 1
                    return False
        raw = {"command": line, "cwd": cwd}
        await self.emitter.emit(ToolCallStarted(card, declaration.title, "execute", raw_input=raw))
        answer = await self._ask(call, declaration, decision.reason, raw)
        self.policy.remember(call, declaration, answer)
        if answer.allowed:
            return True
        why = {
            ApprovalDecision.CANCELLED: "the question was cancelled",
            ApprovalDecision.REJECT_ALWAYS: "the user rejected it (always)",
        }.get(answer, "the user rejected it or did not answer")
        message = f"refused: {why}"
        await self.emitter.emit(ToolCallUpdated(card, "failed", content=(TextBlock(message),)))
        raise TerminalRefused(message)

    async def _ask(
        self, call: ToolCall, declaration: Declaration, reason: str, raw: Mapping[str, Any]
    ) -> ApprovalDecision:
        request = ApprovalRequest(
            session_id=self.session_id,
            tool_call_id=call.id,
            tool_name=TOOL,
            title=declaration.title,
            kind="execute",
            raw_input=raw,
            reason=reason,
        )
        try:
            return await self.approver.approve(request)
        except Exception:  # an approver that fails denies: fail closed
            log.exception("approver failed; refusing the terminal")
            return ApprovalDecision.REJECT_ONCE


def _call(call_id: str, line: str) -> tuple[ToolCall, Declaration]:
    return (
        ToolCall(call_id, TOOL, {"command": line}),
        Declaration(title=f"Run `{line}`", kind="execute", command=line),
    )
