"""A trusted workspace file's runtimes run outside the sandbox, so trust pins what
they run: a script they name, rewritten by a command, is a change to the file (asked
again at the next start) and stops the runtime from starting in a running loopd.
A program inside the workspace is never run at all, trusted or not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopd.app import build_app
from loopd.config import ConfigFileError, TrustState, TrustStore, WorkspaceFile, load_config
from loopd.protocol.errors import RuntimeFailure
from loopd.runtimes.acp.agent import AcpRuntimeFactory, AcpSettings
from loopd.runtimes.base import RuntimeContext
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover


def workspace(tmp_path: Path, config: str) -> tuple[dict[str, str], Path]:
    ws = tmp_path / "ws"
    (ws / ".loopd").mkdir(parents=True)
    (ws / "tools").mkdir()
    (ws / ".loopd" / "config.toml").write_text(config)
    env = {
        "LOOPD_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "HOME": str(tmp_path / "home"),
        "PATH": "/usr/bin:/bin",
    }
    return env, ws


def trust(env: dict[str, str], ws: Path) -> None:
    found = WorkspaceFile.read(ws, ws / ".loopd" / "config.toml")
    assert found is not None
    TrustStore(Path(env["LOOPD_HOME"])).trust(found)


SCRIPTED = '[runtimes.helper]\nharness = "acp"\ncommand = "/bin/sh"\nargs = ["tools/agent.sh"]\n'


def test_a_script_a_trusted_file_runs_is_pinned(tmp_path: Path) -> None:
    # The instance: a sandboxed command rewrote the script; the next start ran it.
    env, ws = workspace(tmp_path, SCRIPTED)
    (ws / "tools" / "agent.sh").write_text("echo agent\n")
    trust(env, ws)
    assert load_config(env, ws).workspace.state is TrustState.TRUSTED  # type: ignore[union-attr]
    (ws / "tools" / "agent.sh").write_text("env > /tmp/stolen\n")  # what a command may do
    config = load_config(env, ws)
    assert config.workspace is not None and config.workspace.state is TrustState.CHANGED
    assert "helper" not in config.runtimes


def test_a_file_created_later_where_a_trusted_file_points_is_a_change(tmp_path: Path) -> None:
    env, ws = workspace(tmp_path, SCRIPTED)  # tools/agent.sh does not exist yet
    trust(env, ws)
    (ws / "tools" / "agent.sh").write_text("env > /tmp/stolen\n")
    assert load_config(env, ws).workspace.state is TrustState.CHANGED  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "spelling",
    ['args = ["--script=tools/agent.sh"]', 'env = { NODE_OPTIONS = "tools/agent.sh" }'],
)
def test_a_pinned_file_may_be_named_another_way(tmp_path: Path, spelling: str) -> None:
    text = f'[runtimes.helper]\nharness = "acp"\ncommand = "/bin/sh"\n{spelling}\n'
    env, ws = workspace(tmp_path, text)
    (ws / "tools" / "agent.sh").write_text("echo agent\n")
    trust(env, ws)
    (ws / "tools" / "agent.sh").write_text("env > /tmp/stolen\n")
    assert load_config(env, ws).workspace.state is TrustState.CHANGED  # type: ignore[union-attr]


async def test_a_running_loopd_does_not_start_a_runtime_whose_script_moved(
    tmp_path: Path,
) -> None:
    # Not named in the issue: the daemon keeps its catalog; the script is rewritten
    # after the file was read and before the runtime starts.
    mark = tmp_path / "ran"
    env, ws = workspace(tmp_path, SCRIPTED)
    (ws / "tools" / "agent.sh").write_text("exit 0\n")
    trust(env, ws)
    config = load_config(env, ws)
    assert config.workspace is not None
    (ws / "tools" / "agent.sh").write_text(f"echo ran > {mark}\n")
    settings = AcpSettings("/bin/sh", ("tools/agent.sh",), base_env=env, pins=config.workspace.runs)
    ctx = RuntimeContext("s1", str(ws), (), RecordingEmitter(), ScriptedApprover.of(), {})
    with pytest.raises(RuntimeFailure, match="changed since the folder was trusted"):
        await AcpRuntimeFactory("helper", settings).open(ctx)
    assert not mark.exists()


async def test_a_trusted_file_never_runs_a_program_inside_the_workspace(tmp_path: Path) -> None:
    # Another executable: the trusted file's own command, found by path.
    mark = tmp_path / "ran"
    agent = f'[runtimes.helper]\nharness = "claude"\ncommand = "{tmp_path}/ws/tools/claude"\n'
    env, ws = workspace(tmp_path, agent)
    (ws / "tools" / "claude").write_text(f"#!/bin/sh\necho ran > {mark}\necho 2.0.0\n")
    os.chmod(ws / "tools" / "claude", 0o755)
    trust(env, ws)
    app = build_app(env, str(ws))
    try:
        assert "helper" not in app.manager.runtimes
        assert any(s.name == "helper" for s in app.catalog.skipped)
    finally:
        await app.aclose()
    assert not mark.exists()  # not even asked its --version


def test_a_file_nested_too_deep_pins_nothing_and_stops_loopd_as_an_error(tmp_path: Path) -> None:
    """Not named in the issue: the pins parse the file's TOML too (tomllib raised
    RecursionError on `[[[…` 50,000 deep, out of `loopd trust`)."""
    env, ws = workspace(tmp_path, "a = " + "[" * 50_000 + "]" * 50_000 + "\n")
    trust(env, ws)
    with pytest.raises(ConfigFileError, match="nested too deep"):
        load_config(env, ws)
