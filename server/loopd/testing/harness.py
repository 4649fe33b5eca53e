"""A real SessionManager over a real SqliteStore, with a scripted model.

For tests of anything that sits on the session layer (the protocol adapters, the
CLI): everything is the production code except the model (a `ScriptedProvider`) and,
when a test asks, the tools and the policy.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopd.engine.loop import EngineConfig
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.runtimes.base import RuntimeContext
from loopd.runtimes.native import ModeInfo, NativeRuntimeFactory, NativeWiring, SessionTools
from loopd.sessions.manager import SessionManager
from loopd.store.sqlite import SqliteStore
from loopd.testing.fakes import FakeClock, FakeToolBox, ScriptedPolicy, ScriptedProvider

TEST_MODES = (
    ModeInfo("plan", "Plan", "Read-only"),
    ModeInfo("ask", "Ask", "Ask before changes"),
    ModeInfo("accept_edits", "Accept edits", "Edits run, commands ask"),
    ModeInfo("full_auto", "Full auto", "Nothing asks"),
)


@dataclass(slots=True)
class RecordingLink:
    """A `ClientLink` that records updates and answers approvals from a queue (or
    holds them open when the queue is empty)."""

    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answers: list[ApprovalDecision] = field(default_factory=list)
    asked: list[ApprovalRequest] = field(default_factory=list)

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        self.updates.append((session_id, dict(update)))

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        if self.answers:
            return self.answers.pop(0)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for _, u in self.updates]


def scripted_manager(
    data_dir: Path,
    provider: ScriptedProvider,
    tools: SessionTools | None = None,
    policy: ScriptedPolicy | None = None,
    tools_for: Callable[[RuntimeContext], SessionTools] | None = None,
) -> SessionManager:
    """`tools_for` builds each session's tools (to give them that session's view of
    the files, say); without it every session shares `tools` (or a `FakeToolBox`)."""
    store = SqliteStore(data_dir / "sessions.db")
    ticks = itertools.count()

    def shared_tools(_: RuntimeContext) -> SessionTools:
        return tools if tools is not None else FakeToolBox()

    def policy_for(_: RuntimeContext, mode: str, remembered: Mapping[str, Any]) -> ScriptedPolicy:
        return policy if policy is not None else ScriptedPolicy()

    wiring = NativeWiring(
        provider_for=lambda model: provider,
        tools_for=tools_for or shared_tools,
        policy_for=policy_for,
        system_for=lambda ctx: f"You work in {ctx.cwd}.",
        clock=FakeClock(),
        modes=TEST_MODES,
        default_mode="ask",
        models=("scripted",),
        default_model="scripted",
        engine=EngineConfig(model="scripted"),
    )
    return SessionManager(
        store=store,
        runtimes={"native": NativeRuntimeFactory("native", wiring, store)},
        default_runtime="native",
        now=lambda: f"2026-11-29T00:00:{next(ticks):06d}Z",
    )
