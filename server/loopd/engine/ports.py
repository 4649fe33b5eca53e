"""The ports the engine talks through. The engine owns none of their mechanisms.

The engine never writes to a terminal, never sleeps on the wall clock, never spawns a
process and never opens a socket: everything observable or effectful crosses one of
these Protocols. Production wires real implementations in `loopd.app`; tests wire the
shipped fakes in `loopd.testing`.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from loopd.engine.guard import LoopGuardSnapshot
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import Location, Prompt, SessionEvent, ToolContent, ToolKind
from loopd.protocol.messages import ImagePart, Message, ToolUsePart
from loopd.protocol.model import ModelRequest, StreamEvent, ToolSpec, Usage


class Emitter(Protocol):
    """Publishes observable facts. Every client sees the session through this."""

    async def emit(self, event: SessionEvent) -> None: ...


class Journal(Protocol):
    """Persists the model-facing history, one message at a time, as it is appended."""

    async def append(self, message: Message) -> None: ...


class WindowBook(Protocol):
    """The context windows learned from overflow errors, per model, kept so the next
    session already knows them."""

    def learned(self, model: str) -> int | None: ...

    def learn(self, model: str, window: int) -> None: ...


class ContextJournal(Protocol):
    """Persists where the model's view of the history starts and the summary that
    stands for what lies before it, and what the session has spent."""

    def compacted(self, start: int, summary: str) -> None: ...

    def spent(self, spending: Spending) -> None:
        """Kept after every step of a turn (with the turn's guard) and when it ends
        (without)."""
        ...


@dataclass(frozen=True, slots=True)
class Spending:
    """What a session has spent, as kept across processes: its running cost in USD,
    and the loop guard's snapshot of a turn still running (seed 004's
    snapshot/restore). A session loaded with a snapshot had its turn cut short (a
    crash, a kill); its next turn goes on from that snapshot, with the spending,
    the repetition history and the warnings already given, because a crash must
    not be a way out of a budget, nor a reason to warn twice."""

    cost: float = 0.0
    guard: LoopGuardSnapshot | None = None

    def to_json(self) -> dict[str, Any]:
        return {"cost": self.cost, "guard": None if self.guard is None else self.guard.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Spending:
        """Forgiving, as every read of the store is: a cost that is not a finite
        amount is 0, a guard snapshot that cannot be read (damaged, or a version
        this code does not know) is none."""
        cost, guard = data.get("cost"), data.get("guard")
        if isinstance(cost, bool) or not isinstance(cost, int | float):
            cost = 0.0
        if not (math.isfinite(cost) and cost >= 0):
            cost = 0.0
        try:
            snapshot = LoopGuardSnapshot.from_json(guard) if isinstance(guard, dict) else None
        except ValueError:
            snapshot = None
        return cls(float(cost), snapshot)


NOTHING_SPENT = Spending()


class Clock(Protocol):
    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class Provider(Protocol):
    """Streams one model reply. Raises `loopd.protocol.errors.ProviderError`s."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...


class Approver(Protocol):
    """Resolves a boundary crossing. Denying on timeout or on a dropped client is the
    implementation's job: with nobody to ask, the alternative would be granting in
    silence."""

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision: ...


ToolCall = ToolUsePart
"""A call the engine runs is the model's tool use itself (or one loopd makes in its
name: a typed `!command`, an @-mention's read, an explorer's scoped call): one type,
so a call passes from the reply to the tools without a copy."""


@dataclass(frozen=True, slots=True)
class Declaration:
    """What a call says it will touch, before it runs: what the scheduler orders by,
    what the policy decides on and what the person is shown. Paths are absolute and
    canonical. `unsandboxed`: the command asks to run outside the OS sandbox (a
    retry after the sandbox refused it), which the policy always asks about.
    `asks_person`: the call puts a question to the person, who answers one at a
    time. A call that declares no path and no command, of a kind that is not
    `HARMLESS_KINDS`, has unknown effects (`unknown_effects`): an MCP tool that
    says nothing may touch anything."""

    title: str
    kind: ToolKind
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    command: str | None = None
    network: bool = False
    locations: tuple[Location, ...] = ()
    preview: tuple[ToolContent, ...] = ()
    unsandboxed: bool = False
    asks_person: bool = False

    @property
    def unknown_effects(self) -> bool:
        declared = self.reads or self.writes or self.command is not None
        return not declared and self.kind not in HARMLESS_KINDS


HARMLESS_KINDS: frozenset[ToolKind] = frozenset({"think", "switch_mode"})
"""Kinds with no effect outside the conversation (a plan, a question)."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """`output` and `images` go to the model; `content` is what clients show.
    `spent` and `cost_usd` are what the call itself spent on models (an explore
    child's turn), charged to the turn that made the call: its token and cost
    ceilings, and the session's running cost, see every request made for it."""

    output: str
    is_error: bool = False
    content: tuple[ToolContent, ...] = ()
    raw_output: Mapping[str, Any] | None = None
    locations: tuple[Location, ...] = ()
    images: tuple[ImagePart, ...] = ()
    spent: Usage | None = None
    cost_usd: float | None = None


class ToolProgress(Protocol):
    """Live content while a call runs (a terminal as it fills, say)."""

    async def __call__(self, content: tuple[ToolContent, ...]) -> None: ...


class ToolBox(Protocol):
    """The session's tools. `declare` raises `ToolInputError` for unusable arguments;
    `run` reports failures as an error result and raises only `CancelledError`.
    `refusal` says why `call` would be refused if it ran now (an edit of a file that
    is not there, text that does not match), or None: asked just before the person
    is, since a person must not approve what then cannot run. It changes nothing,
    and None where only the run can tell (a path it may open only once approved)."""

    def specs(self) -> Sequence[ToolSpec]: ...

    async def declare(self, call: ToolCall) -> Declaration: ...

    async def refusal(self, call: ToolCall) -> str | None: ...

    async def run(self, call: ToolCall, progress: ToolProgress) -> ToolResult: ...


class Mentions(Protocol):
    """Context the person mentioned in a prompt (an MCP server's resource, linked),
    read in before the model sees it. Only what the session offered is read: any
    other link stays a link. A read that fails is said in the prompt, never raised."""

    async def resolve(self, prompt: Prompt) -> Prompt: ...


class Guides(Protocol):
    """The instruction files of the folders a turn works in, below its working
    directory (a package's own `AGENTS.md`). A read that fails is said in the text."""

    async def entered(self, paths: Sequence[str]) -> list[str]:
        """Reminders for the files of the folders the canonical `paths` lie in that
        the model has not been given yet; each is given once."""
        ...


class Verdict(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    verdict: Verdict
    reason: str = ""


class Policy(Protocol):
    """Decides each call before it runs, and learns the person's "always" answers."""

    def decide(self, call: ToolCall, declaration: Declaration) -> PolicyDecision: ...

    def remember(
        self, call: ToolCall, declaration: Declaration, decision: ApprovalDecision
    ) -> None: ...
