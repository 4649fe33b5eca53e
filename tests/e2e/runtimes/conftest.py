"""Shared pieces for the foreign-runtime end-to-end tests: work dirs, and an approver
that rejects once its script runs out (the CLIs, the fake model server and the codex
state dir come from tests/e2e/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.protocol.approvals import ApprovalDecision
from loopd.testing.fakes import ScriptedApprover
from tests.e2e.conftest import pinned_binary

__all__ = ["approver_of", "pinned_binary"]


def approver_of(*decisions: ApprovalDecision) -> ScriptedApprover:
    """Answers each question with the next decision, rejecting when out."""
    return ScriptedApprover.of(*decisions, when_out=ApprovalDecision.REJECT_ONCE)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work
