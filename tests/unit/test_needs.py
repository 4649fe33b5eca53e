"""`tests.needs.missing`: a check whose tool is missing skips on a developer's
machine and fails in CI (`.ci/run` sets CI), so the wheel checks and the completion
tests can never pass CI by not running."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.needs import missing


def test_a_missing_tool_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    outcome = missing("uv is not installed")
    assert isinstance(outcome, pytest.skip.Exception)
    assert str(outcome) == "uv is not installed: run scripts/setup.sh"


def test_a_missing_tool_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    outcome = missing("Python 3.12 is not installed", "pyenv install 3.12")
    assert isinstance(outcome, pytest.fail.Exception)
    assert str(outcome) == "Python 3.12 is not installed: CI runs every check (pyenv install 3.12)"


def test_ci_runs_make_test_with_ci_set() -> None:
    """What makes the difference: `.ci/run` exports CI before `make test`."""
    lines = (Path(__file__).parents[2] / ".ci" / "run").read_text().splitlines()
    assert lines.index('export CI="${CI:-true}"') < lines.index("make test")
