"""Shared pieces for end-to-end tests that spawn `loopd` itself.

`isolated_env` gives a child loopd its own data dir, config dir and HOME (so the
developer's config, sessions and CLIs never leak in), the loopback fake model as
its Anthropic endpoint, and this checkout's sources on PYTHONPATH. `pinned_binary`
and `home_cache` are for the foreign CLIs (Claude Code, Codex) pinned in
tests/clients.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from loopd.testing.fake_llm import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]
LOOPD = [sys.executable, "-m", "loopd"]
CLIENTS = ROOT / "tests" / "clients" / "node_modules" / ".bin"


def pinned_binary(name: str) -> str:
    """The pinned CLI from tests/clients, or skip saying how to get it."""
    path = CLIENTS / name
    if not path.exists():
        pytest.skip(f"{name} is not installed: run scripts/setup.sh (npm ci in tests/clients)")
    return str(path)


DONE_TOML = """
[done]
enabled = true
max_stall_cycles = 1
protected = ["tests/**"]

[[done.criteria]]
name = "content"
command = "grep -q good app.txt"
"""
"""A workspace `[done]` for the seal tests: app.txt must say "good"; a turn that
fails twice without progress is incomplete."""


def trusted_config(folder: Path, env: Mapping[str, str], text: str = DONE_TOML) -> None:
    """Write `folder/.loopd/config.toml` and trust it in `env`'s data dir, as the
    person would with `loopd trust` (an untrusted `[done]` would be ignored)."""
    from loopd.config import TrustStore, WorkspaceFile, data_dir, workspace_config_file

    path = workspace_config_file(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    found = WorkspaceFile.read(folder, path)
    assert found is not None
    TrustStore(data_dir(env)).trust(found)


def run_loopd(
    args: list[str], env: dict[str, str], cwd: Path, stdin: str = "", **kw: Any
) -> subprocess.CompletedProcess[str]:
    """`loopd ARGS` as a subprocess, its output captured as text."""
    return subprocess.run(
        [*LOOPD, *args],
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        **kw,
    )


def serving() -> dict[str, str]:
    """How the `loopd acp` and `loopd lsp` these tests start serve (see the suite's
    `tests/conftest.py`), for environments built from nothing."""
    return {k: os.environ[k] for k in ("LOOPD_DAEMON", "LOOPD_DAEMON_IDLE")}


def isolated_env(tmp: Path, fake: FakeLLMServer | None, **extra: str) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LOOPD_HOME": str(tmp / "data"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "PYTHONPATH": str(ROOT / "server"),
        "LANG": "C.UTF-8",
        **serving(),
    }
    if fake is not None:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
        env["ANTHROPIC_API_KEY"] = "test-key"
    env.update(extra)
    return env


def anthropic_texts(body: dict[str, Any]) -> list[str]:
    """The texts an Anthropic Messages request carries, oldest first."""
    texts = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [b.get("text", "") for b in content if b.get("type") == "text"]
    return texts


def responses_texts(body: dict[str, Any]) -> list[str]:
    """The texts an OpenAI Responses request carries, oldest first."""
    return [
        part.get("text", "")
        for item in body["input"]
        if isinstance(item.get("content"), list)
        for part in item["content"]
    ]


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


CACHE_BASE = Path.home() / ".cache" / "loopd-tests"


def private_cache_dir(base: Path = CACHE_BASE) -> Path:
    """A new folder under `base` that no other test, and no other test run, has: made
    by `mkdtemp`, which never reuses a name (runs side by side used to pick the same
    `codex0` and delete each other's state)."""
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="codex-", dir=base))


@pytest.fixture
def home_cache() -> Iterator[Path]:
    """A state dir outside /tmp: codex refuses its sandbox helper under /tmp."""
    path = private_cache_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)
