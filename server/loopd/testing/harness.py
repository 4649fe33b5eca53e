"""A real SessionManager over a real SqliteStore, with a scripted model.

For tests of anything that sits on the session layer (the protocol adapters, the
CLI): everything is the production code except the model (a `ScriptedProvider`) and,
when a test asks, the tools and the policy.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopd.engine.done import DoneChecks
from loopd.engine.loop import EngineConfig
from loopd.engine.ports import Provider, ToolBox
from loopd.policy.reading import DiskReader
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.errors import RuntimeFailure
from loopd.protocol.events import Command, Prompt
from loopd.protocol.turns import UndoReport
from loopd.protocol.wire.shapes import Mention
from loopd.runtimes.base import RuntimeContext
from loopd.runtimes.native.instructions import read_chain, read_guides
from loopd.runtimes.native.runtime import NativeRuntimeFactory
from loopd.runtimes.native.wiring import NativeWiring
from loopd.sessions.manager import SessionManager
from loopd.store.sqlite import SqliteStore
from loopd.testing.fakes import FakeClock, FakeToolBox, ScriptedPolicy
from loopd.tools.access import FileAccess


@dataclass(eq=False, slots=True)
class RecordingLink:
    """A `ClientLink` that records updates and answers approvals from a queue (or
    holds them open when the queue is empty)."""

    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answers: list[ApprovalDecision] = field(default_factory=list)
    asked: list[ApprovalRequest] = field(default_factory=list)

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        self.updates.append((session_id, dict(update)))

    def files(self, session_id: str, roots: Sequence[str], local: FileAccess) -> FileAccess:
        return local

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        if self.answers:
            return self.answers.pop(0)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for _, u in self.updates]


@dataclass(slots=True)
class ScriptedParts:
    """Session parts from given doubles; `modes` records every mode switch."""

    tools: ToolBox
    policy: ScriptedPolicy
    modes: list[str] = field(default_factory=list)
    turns: int = 0
    containment: str = "scripted: nothing is contained"
    done: DoneChecks | None = None

    def set_mode(self, mode: str) -> None:
        self.modes.append(mode)

    async def begin_turn(self) -> None:
        self.turns += 1

    async def undo(self) -> UndoReport:
        return UndoReport(restored=("undone",)) if self.turns else UndoReport()

    def prompt_commands(self) -> tuple[Command, ...]:
        return ()

    async def expand(self, name: str, text: str) -> Prompt:
        raise RuntimeFailure(f"/{name} is not a prompt command")

    def mentions(self) -> tuple[Mention, ...]:
        return ()

    async def resolve(self, prompt: Prompt) -> Prompt:
        return prompt

    def remembered(self) -> Mapping[str, Any]:
        return {"remembered": [[name, str(d)] for name, d in self.policy.remembered]}

    async def changed_files(self) -> list[str]:
        return []

    def forget_reads(self) -> None:
        return None

    def writes(self) -> int:
        return 0  # the scripted tools write nothing loopd counts

    def put_back(self, paths: Sequence[str]) -> None:
        return None

    async def aclose(self) -> None:
        return None


def scripted_manager(
    data_dir: Path,
    provider: Provider,
    tools: ToolBox | None = None,
    policy: ScriptedPolicy | None = None,
    tools_for: Callable[[RuntimeContext], ToolBox] | None = None,
    models: Sequence[str] = ("scripted",),
) -> SessionManager:
    """`tools_for` builds each session's tools (to hand them the session's
    `editor_files`, say); without it every session shares `tools` (or a fake).
    `models` are the choices of the model option; the first is the default (a
    catalogued one has a window and a price)."""
    store = SqliteStore(data_dir / "sessions.db")
    ticks = itertools.count()

    async def parts_for(
        ctx: RuntimeContext, mode: str, remembered: Mapping[str, Any]
    ) -> ScriptedParts:
        chosen = tools_for(ctx) if tools_for is not None else tools or FakeToolBox()
        return ScriptedParts(chosen, policy or ScriptedPolicy(), [mode])

    wiring = NativeWiring(
        provider_for=lambda model: provider,
        parts_for=parts_for,
        system_for=lambda ctx, chain: "\n\n".join([f"You work in {ctx.cwd}.", *chain.values()]),
        chain_for=functools.partial(read_chain, reader=DiskReader(())),
        guides_for=functools.partial(read_guides, reader=DiskReader(())),
        clock=FakeClock(),
        default_mode="ask",
        models=tuple(models),
        default_model=models[0],
        engine=EngineConfig(model=models[0]),
    )
    return SessionManager(
        store=store,
        runtimes={"native": NativeRuntimeFactory("native", wiring, store)},
        default_runtime="native",
        now=lambda: f"2026-11-29T00:00:{next(ticks):06d}Z",
    )
