"""Shared pieces for the foreign-runtime end-to-end tests: work dirs, and an approver
that rejects once its script runs out (the CLIs, the fake model server and the codex
state dir come from tests/e2e/conftest.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.events import Prompt, SessionEvent, TextBlock, ToolCallUpdated
from loopd.protocol.turns import Outcome
from loopd.runtimes.base import Runtime, RuntimeContext, RuntimeFactory
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover
from tests.e2e.conftest import pinned_binary

__all__ = ["BrokenEmitter", "approver_of", "one_turn", "open_runtime", "pinned_binary", "say"]


class BrokenEmitter(RecordingEmitter):
    """Fails to show a tool call going ahead (an editor that went away mid-answer)."""

    async def emit(self, event: SessionEvent) -> None:
        if isinstance(event, ToolCallUpdated) and event.status == "in_progress":
            raise RuntimeError("the editor went away")
        await super().emit(event)


def approver_of(*decisions: ApprovalDecision) -> ScriptedApprover:
    """Answers each question with the next decision, rejecting when out."""
    return ScriptedApprover.of(*decisions, when_out=ApprovalDecision.REJECT_ONCE)


async def open_runtime(
    factory: RuntimeFactory,
    cwd: Path,
    approver: ScriptedApprover | None = None,
    state: dict[str, Any] | None = None,
    mode: str = "ask",
    emitter: RecordingEmitter | None = None,
) -> tuple[Runtime, RecordingEmitter]:
    """The factory's runtime for a session in `cwd`, in `mode`, and what it emits."""
    emitter = emitter or RecordingEmitter()
    context = RuntimeContext(
        session_id="s1",
        cwd=str(cwd),
        additional_roots=(),
        emitter=emitter,
        approver=approver or approver_of(),
        config={"mode": mode},
        state=state or {},
    )
    return await factory.open(context), emitter


def say(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


async def one_turn(runtime: Runtime, text: str, within: float = 90) -> Outcome:
    """One turn (bounded), then the runtime closed."""
    try:
        return await asyncio.wait_for(runtime.prompt(say(text)), within)
    finally:
        await runtime.close()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work
