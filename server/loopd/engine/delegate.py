"""Explore: one question answered by a read-only child turn (seed 000 `Delegate`,
`Explore`, `DelegateResult`; seed 002 `SubagentAgent`).

Everything that makes the child what it is, is decided here, because it is a
property of what a turn is:

- read-only by construction: its toolbox holds only the tools that look (read, glob,
  grep, bash) and never `explore`, so nesting is impossible rather than forbidden;
  its policy refuses every write and every command that is not read-only, and
  whatever would be put to the person is refused too (nobody is asked on a child's
  behalf);
- a smaller iteration cap: the child answers ONE question;
- what the parent turn has left of its token ceiling and cost budget bounds the
  child's turn (`loopd.engine.spend.Allowance`): its spending is the parent's, and a
  child starts only when something is left;
- a capped report, declared as cut when it is: a child returning its whole context
  defeats the point, the cost of reading comes back through the answer;
- the report says what the child read, wrote, could not read and could not write,
  which turns "I found nothing" into something a person can spot-check;
- its calls live in an id space of their own: the session's policy and tools see
  each as `<scope>/<id>`, the scope fresh and unguessable per child, so a child's
  `call_1` can neither take nor spend the grant the person gave the parent's
  `call_1` (grants are kept by call id), whatever ids either model makes up.

The child is ephemeral: its history is not journaled, and the person sees it as the
one `explore` call, its activity summarised as it runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from loopd.engine.history import random_id
from loopd.engine.limits import Limits
from loopd.engine.loop import Engine, EngineConfig, EnginePorts
from loopd.engine.ports import (
    Clock,
    Declaration,
    Policy,
    PolicyDecision,
    Provider,
    ToolBox,
    ToolCall,
    ToolProgress,
    ToolResult,
    Verdict,
)
from loopd.engine.spend import ALLOWANCE
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import Prompt, SessionEvent, TextBlock, ToolCallStarted, ToolCallUpdated
from loopd.protocol.messages import Message
from loopd.protocol.model import ThinkingLevel, ToolSpec, Usage

EXPLORE_TOOL = "explore"
CHILD_TOOLS = ("read", "glob", "grep", "bash")
SHOWN_LINES = 12  # of the child's activity, in the parent's tool call
NOT_STARTED = "No explorer was started: this turn's token or cost budget is used up."


@dataclass(frozen=True, slots=True)
class DelegateLimits:
    max_iterations: int = 10
    max_result_chars: int = 8_000


@dataclass(frozen=True, slots=True)
class ChildRuntime:
    """Who answers: a provider, the model id it is sent and a thinking level,
    resolved by the caller for the `explore` agent role of its catalog (seed 001's
    per-agent entries)."""

    provider: Provider
    model: str
    name: str = ""  # the catalog entry, for the person
    thinking: ThinkingLevel = "off"
    agent: str = EXPLORE_TOOL  # the catalog's role for this child

    def identity(self) -> dict[str, str]:
        """What the parent's tool call records about who answered."""
        return {"agent": self.agent, "runtime": self.name, "model": self.model}


@dataclass(frozen=True, slots=True)
class DelegateResult:
    conclusion: str
    read: tuple[str, ...] = ()
    wrote: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    unwritten: tuple[str, ...] = ()
    truncated: bool = False
    stop_reason: str = "end_turn"
    usage: Usage = field(default_factory=Usage)  # what the child's turn spent, for the
    cost_usd: float | None = None  # parent turn to be charged (None: price unknown)

    def render(self) -> str:
        """The report as the parent model reads it."""
        lines = [self.conclusion.strip() or "(the explorer gave no answer)", ""]
        lines.append(f"Read: {', '.join(self.read) or 'nothing'}")
        lines.append(f"Wrote: {', '.join(self.wrote) or 'nothing'}")
        if self.unread:
            lines.append(f"Could not read (refused or failed): {', '.join(self.unread)}")
        if self.unwritten:
            lines.append(f"Could not write (explore is read-only): {', '.join(self.unwritten)}")
        if self.truncated:
            lines.append("The answer was cut: it was longer than the report allows.")
        if self.stop_reason != "end_turn":
            lines.append(f"The explorer stopped early ({self.stop_reason}).")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        return {
            "read": list(self.read),
            "wrote": list(self.wrote),
            "unread": list(self.unread),
            "unwritten": list(self.unwritten),
            "truncated": self.truncated,
            "stopReason": self.stop_reason,
        }


def child_instructions(tool_names: Sequence[str], cwd: str) -> str:
    """What a child turn is told (the product's own words, for harnesses too)."""
    return (
        "You are an explorer: another agent delegated ONE self-contained question to you. "
        "You cannot see its conversation; the question is your whole input. You are "
        "read-only: you look and report, you never change anything.\n"
        f"You work in {cwd}. Your tools: {', '.join(tool_names)} (bash runs read-only "
        "commands only).\n"
        "Investigate efficiently and stay on the question. Then answer in one "
        "self-contained message: exact file paths, symbols, line references and short "
        "snippets; only what you actually read. If you could not determine something, "
        "say so plainly. Your final message is all the caller receives."
    )


@dataclass(slots=True)
class _Ledger:
    read: list[str] = field(default_factory=list)
    wrote: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    unwritten: list[str] = field(default_factory=list)

    def record(self, declaration: Declaration, ok: bool) -> None:
        _extend(self.read if ok else self.unread, declaration.reads)
        _extend(self.wrote if ok else self.unwritten, declaration.writes)


def _extend(into: list[str], paths: Sequence[str]) -> None:
    into.extend(p for p in paths if p not in into)


def _scoped(call: ToolCall, scope: str) -> ToolCall:
    return ToolCall(f"{scope}/{call.id}", call.name, call.input)


@dataclass(slots=True)
class _ReadOnlyTools:
    """Offers the child only the looking tools. Any tool of `tools` is declared, so
    a write the child attempts anyway is seen for what it is (and refused by the
    policy, and reported); `tools` never holds `explore`. Every outcome is kept.
    The session's tools see the child's calls in its `scope`."""

    tools: ToolBox
    ledger: _Ledger
    scope: str
    declared: dict[str, Declaration] = field(default_factory=dict)

    def specs(self) -> Sequence[ToolSpec]:
        return [s for s in self.tools.specs() if s.name in CHILD_TOOLS]

    async def declare(self, call: ToolCall) -> Declaration:
        declaration = await self.tools.declare(_scoped(call, self.scope))
        self.declared[call.id] = declaration
        return declaration

    async def run(self, call: ToolCall, progress: ToolProgress) -> ToolResult:
        result = await self.tools.run(_scoped(call, self.scope), progress)
        self.ledger.record(self.declared[call.id], ok=not result.is_error)
        return result


@dataclass(slots=True)
class _ReadOnlyPolicy:
    """Refuses writes and commands that are not read-only; what the parent's policy
    would ask about is refused (nobody answers for a child); the rest is the parent's
    own decision (its rules, its roots, its secrets)."""

    parent: Policy
    read_only_command: Callable[[str], bool]
    ledger: _Ledger
    scope: str

    def decide(self, call: ToolCall, declaration: Declaration) -> PolicyDecision:
        decision = self._decide(_scoped(call, self.scope), declaration)
        if decision.verdict is not Verdict.ALLOW:
            self.ledger.record(declaration, ok=False)
            if declaration.command is not None and not declaration.writes:
                _extend(self.ledger.unwritten, [f"`{declaration.command}`"])
        return decision

    def _decide(self, call: ToolCall, declaration: Declaration) -> PolicyDecision:
        if declaration.writes or declaration.kind in ("edit", "delete", "move"):
            return PolicyDecision(Verdict.DENY, "explore is read-only")
        if call.name not in CHILD_TOOLS:
            return PolicyDecision(Verdict.DENY, f"explore cannot use {call.name}")
        command = declaration.command
        if command is not None and (
            declaration.unsandboxed or declaration.network or not self.read_only_command(command)
        ):
            return PolicyDecision(Verdict.DENY, "explore runs read-only commands only")
        decision = self.parent.decide(call, declaration)
        if decision.verdict is Verdict.ASK:
            return PolicyDecision(Verdict.DENY, f"nobody to ask for an explorer: {decision.reason}")
        return decision

    def remember(
        self, call: ToolCall, declaration: Declaration, decision: ApprovalDecision
    ) -> None:
        return None


class _Refuse:
    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.REJECT_ONCE


class _NoJournal:
    async def append(self, message: Message) -> None:
        return None


@dataclass(slots=True)
class _Activity:
    """The child's tool calls, summarised as lines in the parent's one tool call."""

    progress: ToolProgress
    header: str
    titles: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    async def emit(self, event: SessionEvent) -> None:
        match event:
            case ToolCallStarted(call_id, title):
                self.titles[call_id] = title
                self.lines.append(f"… {title}")
            case ToolCallUpdated(call_id, status) if status in ("completed", "failed"):
                mark = "✓" if status == "completed" else "✗"
                self.lines.append(f"{mark} {self.titles.get(call_id, call_id)}")
            case _:
                return
        shown = [self.header, *self.lines[-SHOWN_LINES:]]
        await self.progress((TextBlock("\n".join(shown)),))


async def explore(
    question: str,
    *,
    child: ChildRuntime,
    tools: ToolBox,
    policy: Policy,
    read_only_command: Callable[[str], bool],
    clock: Clock,
    cwd: str,
    progress: ToolProgress,
    limits: DelegateLimits = DelegateLimits(),
) -> DelegateResult:
    """Answer `question` with a read-only child turn and report on it."""
    allowance = ALLOWANCE.get()
    if allowance.spent:
        return DelegateResult(NOT_STARTED, stop_reason="max_turn_requests")
    ledger, scope = _Ledger(), random_id(EXPLORE_TOOL)
    view = _ReadOnlyTools(tools, ledger, scope)
    names = [s.name for s in view.specs()]
    where = f" on {child.name}" if child.name else ""
    counter = itertools.count()
    ports = EnginePorts(
        provider=child.provider,
        tools=view,
        emitter=_Activity(progress, f"Exploring{where} ({child.model})"),
        approver=_Refuse(),
        policy=_ReadOnlyPolicy(policy, read_only_command, ledger, scope),
        journal=_NoJournal(),
        clock=clock,
        new_id=lambda prefix: f"explore_{prefix}_{next(counter)}",
    )
    config = EngineConfig(
        model=child.model,
        thinking=child.thinking,
        system=child_instructions(names, cwd),
        limits=allowance.within(Limits(max_iterations=limits.max_iterations, max_tool_calls=40)),
    )
    engine = Engine("explore", config, ports)
    outcome = await engine.run(Prompt((TextBlock(question),)))
    answer = next((m.text for m in reversed(engine.history) if m.role == "assistant"), "")
    cut = len(answer) > limits.max_result_chars
    return DelegateResult(
        conclusion=answer[: limits.max_result_chars],
        read=tuple(ledger.read),
        wrote=tuple(ledger.wrote),
        unread=tuple(ledger.unread),
        unwritten=tuple(ledger.unwritten),
        truncated=cut,
        stop_reason=outcome.stop_reason,
        usage=outcome.usage,
        cost_usd=engine.keeper.cost or None,
    )
