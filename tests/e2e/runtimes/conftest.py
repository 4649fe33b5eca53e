"""Shared pieces for the foreign-runtime end-to-end tests: the pinned CLIs, the fake
model server, work dirs, and an approver that rejects once its script runs out."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from loopd.protocol.approvals import ApprovalDecision
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.fakes import ScriptedApprover

CLIENTS = Path(__file__).resolve().parents[2] / "clients" / "node_modules" / ".bin"
E = TypeVar("E")


def pinned_binary(name: str) -> str:
    """The pinned CLI from tests/clients, or skip saying how to get it."""
    path = CLIENTS / name
    if not path.exists():
        pytest.skip(f"{name} is not installed: run scripts/setup.sh (npm ci in tests/clients)")
    return str(path)


def approver_of(*decisions: ApprovalDecision) -> ScriptedApprover:
    """Answers each question with the next decision, rejecting when out."""
    return ScriptedApprover.of(*decisions, when_out=ApprovalDecision.REJECT_ONCE)


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
