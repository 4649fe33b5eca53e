"""`RulePolicy`: the one place that decides whether a tool call runs, asks or is refused.

The order is the one Codex and Claude Code agree on, and it is not negotiable by mode:

1. deny: configured deny rules, remembered "reject always" answers, and the built-in
   denials (reading a secret; any file write in plan mode);
2. ask: configured ask rules;
3. allow: configured allow rules and remembered "allow always" answers;
4. the safe list: read-only commands, reads inside the session roots;
5. sandboxed auto-allow: a command the active sandbox tier can contain (it confines
   writes to the roots and the network to the grant), or an edit inside the roots when
   the mode accepts edits;
6. ask the person.

Fail closed: a tool whose declaration names no effect it understands asks. Under the
`never` approval policy (full auto) every "ask" becomes a denial with the same reason.

Two escalations are never granted by a rule, a mode or a remembered answer:

- a command that declares it runs OUTSIDE the sandbox (`unsandboxed`, the retry of a
  command the sandbox refused) always asks, naming that it runs unsandboxed, and
  "allow always" on it is kept as "allow once";
- a command or tool that declares it needs the network while the session's grant is
  off asks, even when an allow rule covers it (the rule speaks about the command,
  not about the network); "allow always" grants the network for the session.
  With network by domain (`by_domain`: `[sandbox] allowed_domains` in a tier that
  binds the proxy in) there is no whole network to grant: a command's connections
  are decided one host at a time by the proxy (`loopd.sandbox.netgate`), which asks
  the person about unknown hosts, so the declaration asks nothing here.

Every allowed call gets a `Grant` (`loopd.policy.grants`) naming exactly the paths,
network and unsandboxed run it was allowed, which the tools check when it runs.
An ASK that reaches an engine with no approver (or a dropped client, or no answer in
time) must become a denial there: the Approver port's contract, not this class's.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Sequence

from loopd.engine.ports import HARMLESS_KINDS, Declaration, PolicyDecision, ToolCall, Verdict
from loopd.policy.commands import command_prefix, is_safe_command, split_command
from loopd.policy.grants import CallGrants, Grant
from loopd.policy.modes import ApprovalPolicy, Mode, SandboxMode
from loopd.policy.network import NetworkGrant
from loopd.policy.paths import PathIssue, PathPolicy, Unresolvable
from loopd.policy.rules import MatchContext, Rule, RuleAction, RuleSet, escape_glob, first_match
from loopd.policy.tiers import Tier
from loopd.protocol.approvals import ApprovalDecision

NO_RULES = RuleSet()
_SEVERITY = {Verdict.ALLOW: 0, Verdict.ASK: 1, Verdict.DENY: 2}


def _allow(reason: str) -> PolicyDecision:
    return PolicyDecision(Verdict.ALLOW, reason)


class RulePolicy:
    """Implements the engine's `Policy` port for one session. `mode` may be changed
    between calls; `remembered` is what the session store persists (`to_json`)."""

    def __init__(
        self,
        *,
        mode: Mode,
        roots: Sequence[str],
        tier: Tier,
        network: NetworkGrant,
        rules: RuleSet = NO_RULES,
        remembered: RuleSet = NO_RULES,
        home: str,
        sandbox_mode: SandboxMode | None = None,
        extra_secrets: Sequence[str] = (),
        readable: Sequence[str] = (),
        grants: CallGrants | None = None,
        by_domain: bool = False,
    ) -> None:
        self.mode = mode
        self.by_domain = by_domain
        self.grants = grants or CallGrants()
        self.tier = tier
        self.network = network
        self.rules = rules
        self.remembered = remembered
        self.sandbox_override = sandbox_mode
        home = os.path.realpath(home)  # the editor's (`loopd.home.home_path`)
        canonical_roots = tuple(os.path.realpath(r) for r in roots)
        self.paths = PathPolicy(
            canonical_roots,
            home,
            tuple(extra_secrets),
            tuple(os.path.realpath(r) for r in readable),
        )
        self._ctx = MatchContext(canonical_roots, home)

    @property
    def sandbox_mode(self) -> SandboxMode:
        return self.sandbox_override or self.mode.sandbox

    @property
    def approval(self) -> ApprovalPolicy:
        return self.mode.approval

    def decide(self, call: ToolCall, declaration: Declaration) -> PolicyDecision:
        """The verdict; an ALLOW also records the call's `Grant`. A path that cannot
        be resolved (swapped while it was, or holding a NUL) is a denial: a race on
        a path ends in a refusal, never an exception out of the turn."""
        try:
            decl = self._canonical(declaration)
            decision = self._decide(call, decl)
            if decision.verdict is Verdict.ALLOW:
                self.grants.record(call.id, self._grant(decl))
        except Unresolvable as err:
            return PolicyDecision(Verdict.DENY, f"refused: {err.strerror}")
        return decision

    def _decide(self, call: ToolCall, decl: Declaration) -> PolicyDecision:
        for action in (RuleAction.DENY, RuleAction.ASK, RuleAction.ALLOW):
            rule = first_match(self._rules(action), action, call.name, decl, self._ctx)
            if rule is not None:
                return self._by_rule(action, rule, decl)
            if action is RuleAction.DENY and (denial := self._builtin_denial(decl)) is not None:
                return denial
            if action is RuleAction.ASK and (question := self._escalation(decl)) is not None:
                return question
        return self._by_mode(call, decl)

    def remember(
        self, call: ToolCall, declaration: Declaration, decision: ApprovalDecision
    ) -> None:
        """Records the grant of an approved call, and keeps an "always" answer as a
        rule: per command prefix (`git push:*`) or exact command, per path, or for the
        whole tool when it declared neither. "Allow always" on a call that needs the
        network also grants the network; on an unsandboxed run it is kept as once."""
        try:
            decl = self._canonical(declaration)
            grant = self._grant(decl)
        except Unresolvable:
            return  # no grant: the call's own open refuses the path as it finds it
        if decision.allowed:
            self.grants.record(call.id, grant)
        if not decision.remembered or (decl.unsandboxed and decision.allowed):
            return
        rules = self._rules_for(call, decl)
        if decision is ApprovalDecision.ALLOW_ALWAYS:
            self.remembered = self.remembered | RuleSet(allow=rules)
            if declaration.network:
                self.network.grant()
        else:
            self.remembered = self.remembered | RuleSet(deny=rules)

    # -- steps ------------------------------------------------------------------------

    def _rules(self, action: RuleAction) -> tuple[Rule, ...]:
        return self.rules.rules(action) + self.remembered.rules(action)

    def _by_rule(self, action: RuleAction, rule: Rule, decl: Declaration) -> PolicyDecision:
        match action:
            case RuleAction.DENY:
                return PolicyDecision(Verdict.DENY, f"denied by the rule {rule}")
            case RuleAction.ASK:
                return self._ask(f"the rule {rule} asks first")
            case RuleAction.ALLOW:
                if decl.network and not self._network_on(decl.command is not None):
                    return self._ask(f"{decl.title} needs network access, which is off")
                return _allow(f"allowed by the rule {rule}")

    def _escalation(self, decl: Declaration) -> PolicyDecision | None:
        """A run outside the sandbox asks whatever allows it (see the module doc)."""
        if not decl.unsandboxed or self.sandbox_mode is SandboxMode.FULL_ACCESS:
            return None
        return self._ask(
            f"runs OUTSIDE the {self.tier} sandbox, with this user's full access to files "
            "and network; asked every time"
        )

    def _network_on(self, command: bool = False) -> bool:
        """Whether the network a call declares is there; by domain only for commands
        (the proxy carries theirs; a tool's own network is loopd's)."""
        full_access = self.sandbox_mode is SandboxMode.FULL_ACCESS
        return (command and self.by_domain) or self.network.granted or full_access

    def _builtin_denial(self, decl: Declaration) -> PolicyDecision | None:
        for path in decl.reads:
            verdict = self.paths.check_read(path)
            if verdict.issue is PathIssue.SECRET:
                return PolicyDecision(Verdict.DENY, f"reading is refused: {verdict.reason}")
        if decl.writes and decl.command is None and self.sandbox_mode is SandboxMode.READ_ONLY:
            return PolicyDecision(Verdict.DENY, "plan mode is read-only: no file changes")
        return None

    def _by_mode(self, call: ToolCall, decl: Declaration) -> PolicyDecision:
        if decl.command is not None:
            return self._command(decl.command, decl.network)
        decisions = [self._write(p) for p in decl.writes] + [self._read(p) for p in decl.reads]
        if decl.network:
            decisions.append(self._network(call.name))
        if not decisions:
            if decl.kind in HARMLESS_KINDS:
                return _allow("no effects outside the conversation")
            return self._ask(f"{call.name} does not say what it touches")
        return max(decisions, key=lambda d: _SEVERITY[d.verdict])

    def _command(self, command: str, network: bool) -> PolicyDecision:
        full_access = self.sandbox_mode is SandboxMode.FULL_ACCESS
        contained = self.tier.contains_writes and not full_access
        if network and not self._network_on(command=True):
            return self._ask("the command needs network access, which is off")
        if is_safe_command(command, sandboxed=contained):
            return _allow("a read-only command")
        if full_access:
            return _allow("full access: commands run without a sandbox")
        if contained and self.approval is not ApprovalPolicy.UNTRUSTED:
            return _allow(f"runs inside the {self.tier} sandbox")
        if contained:
            return self._ask("plan mode runs only read-only commands without asking")
        return self._ask(f"not a read-only command, and the {self.tier} sandbox cannot contain it")

    def _read(self, path: str) -> PolicyDecision:
        verdict = self.paths.check_read(path)
        if verdict.ok or self.sandbox_mode is SandboxMode.FULL_ACCESS:
            return _allow("a read")
        return self._ask(verdict.reason)

    def _write(self, path: str) -> PolicyDecision:
        verdict = self.paths.check_write(path)
        full_access = self.sandbox_mode is SandboxMode.FULL_ACCESS
        if verdict.issue is PathIssue.PROTECTED or not (verdict.ok or full_access):
            return self._ask(verdict.reason)
        if full_access or self.approval in (ApprovalPolicy.ON_FAILURE, ApprovalPolicy.NEVER):
            return _allow(f"{self.mode.spec.name} mode accepts edits in the workspace")
        return self._ask(f"edits need approval in {self.mode.spec.name} mode")

    def _network(self, tool: str) -> PolicyDecision:
        if self._network_on():
            return _allow("network access is granted")
        return self._ask(f"{tool} needs network access, which is off")

    def _ask(self, reason: str) -> PolicyDecision:
        if self.approval is ApprovalPolicy.NEVER:
            return PolicyDecision(Verdict.DENY, f"{reason} (full auto never asks)")
        return PolicyDecision(Verdict.ASK, reason)

    # -- helpers ----------------------------------------------------------------------

    def _canonical(self, decl: Declaration) -> Declaration:
        reads = tuple(self.paths.canonical(p) for p in decl.reads)
        writes = tuple(self.paths.canonical(p) for p in decl.writes)
        if reads == decl.reads and writes == decl.writes:
            return decl
        return dataclasses.replace(decl, reads=reads, writes=writes)

    def _grant(self, decl: Declaration) -> Grant:
        """What an allowed call may do beyond the defaults: exactly what it declared."""
        outside = {p for p in decl.reads if not self.paths.check_read(p).ok}
        outside |= {p for p in decl.writes if not self.paths.check_write(p).ok}
        return Grant(frozenset(outside), decl.network, decl.unsandboxed)

    def _rules_for(self, call: ToolCall, decl: Declaration) -> tuple[Rule, ...]:
        if decl.command is not None:
            segments = split_command(decl.command)
            if segments is None:
                return (Rule(call.name, " ".join(decl.command.split())),)
            return tuple(dict.fromkeys(Rule(call.name, _prefix_spec(s)) for s in segments))
        paths = decl.writes or decl.reads
        if not paths:
            return (Rule(call.name),)
        return tuple(Rule(call.name, escape_glob(p)) for p in paths)


def _prefix_spec(segment: tuple[str, ...]) -> str:
    words, is_prefix = command_prefix(segment)
    spec = shlex.join(words)
    return f"{spec}:*" if is_prefix else spec
