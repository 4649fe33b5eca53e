"""Shared doubles for the foreign-runtime end-to-end tests (local until loopd.testing
ships its own): an emitter that records, an approver that answers from a script."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import AgentMessageChunk, SessionEvent
from loopd.testing.fake_llm import FakeLLMServer

CLIENTS = Path(__file__).resolve().parents[2] / "clients" / "node_modules" / ".bin"
E = TypeVar("E")


def pinned_binary(name: str) -> str:
    """The pinned CLI from tests/clients, or skip saying how to get it."""
    path = CLIENTS / name
    if not path.exists():
        pytest.skip(f"{name} is not installed: run scripts/setup.sh (npm ci in tests/clients)")
    return str(path)


class RecordingEmitter:
    def __init__(self) -> None:
        self.events: list[SessionEvent] = []
        self._changed = asyncio.Event()

    async def emit(self, event: SessionEvent) -> None:
        self.events.append(event)
        self._changed.set()

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.of(AgentMessageChunk))

    async def wait_for(self, seen: Callable[[list[SessionEvent]], bool]) -> None:
        """Until `seen(events)`; callers bound it with asyncio.timeout."""
        while not seen(self.events):
            self._changed.clear()
            await self._changed.wait()


class ScriptedApprover:
    """Answers each question with the next scripted decision (deny when out)."""

    def __init__(self, *decisions: ApprovalDecision) -> None:
        self.decisions = list(decisions)
        self.requests: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.decisions.pop(0) if self.decisions else ApprovalDecision.REJECT_ONCE


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def home_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A state dir outside /tmp: codex refuses its sandbox helper under /tmp."""
    base = Path.home() / ".cache" / "loopd-tests"
    base.mkdir(parents=True, exist_ok=True)
    path = base / tmp_path_factory.mktemp("codex").name
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)
