"""scripts/setup.sh's decisions, run for real in a copy of its layout with stand-ins
for npm and uv on PATH (the network installs themselves are not the subject)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.e2e


def tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    (tmp_path / "tests" / "clients").mkdir(parents=True)
    (tmp_path / "tests" / "clients" / "package-lock.json").write_text('{"v": 1}\n')
    (tmp_path / "bin").mkdir()
    return tmp_path


def setup(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{repo / 'bin'}:/usr/bin:/bin", "HOME": str(repo)}
    return subprocess.run(
        ["bash", "scripts/setup.sh", *args], cwd=repo, env=env, capture_output=True, text=True
    )


def test_test_clients_install_only_when_the_lock_changed(repo: Path) -> None:
    calls = repo / "npm-calls"
    tool(repo / "bin", "npm", f'echo "$*" >> {calls}; mkdir -p node_modules')
    assert setup(repo, "--test-clients").returncode == 0
    assert setup(repo, "--test-clients").returncode == 0  # unchanged: nothing to do
    (repo / "tests" / "clients" / "package-lock.json").write_text('{"v": 2}\n')
    assert setup(repo, "--test-clients").returncode == 0
    assert calls.read_text().splitlines() == ["ci --silent --no-audit --no-fund"] * 2


def test_without_npm_the_test_clients_are_skipped_with_a_reason(repo: Path) -> None:
    env = {"PATH": str(repo / "bin"), "HOME": str(repo)}
    for name in ("sha256sum", "cut", "cat", "dirname"):
        os.symlink(shutil.which(name) or name, repo / "bin" / name)
    done = subprocess.run(
        ["/bin/bash", "scripts/setup.sh", "--test-clients"],
        cwd=repo, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "npm not found" in done.stderr


def test_a_uv_shim_that_cannot_run_is_not_trusted(repo: Path) -> None:
    """A pyenv shim named uv that finds no uv: setup uses its own uv by full path."""
    tool(repo / "bin", "uv", 'echo "pyenv: uv: command not found" >&2; exit 127')
    for present in ("rg", "bwrap"):  # so no apt-get runs from a test
        tool(repo / "bin", present, "exit 0")
    own = repo / ".tools" / "uv-venv" / "bin"
    own.mkdir(parents=True)
    log = repo / "uv-calls"
    tool(own, "uv", f'[ "$1" = --version ] && echo "uv 0.13.9" && exit 0; echo "$*" >> {log}')
    done = setup(repo)
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines() == ["sync --frozen --quiet"]
