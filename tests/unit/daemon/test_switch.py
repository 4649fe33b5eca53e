"""Whether `loopd acp`/`loopd lsp` use the daemon: `LOOPD_DAEMON`, then the user
file's `[daemon]` (read with tomllib alone, before loopd's config loads; one nested
too deep is a file that does not parse)."""

from __future__ import annotations

import os
from pathlib import Path

import loopd
from loopd.daemon.forward import daemon_env, daemon_idle
from loopd.home import user_config_path
from tests.unit.fifos import released


def env(tmp_path: Path, toml: str | None = None, **extra: str) -> dict[str, str]:
    if toml is not None:
        (tmp_path / "loopd").mkdir(exist_ok=True)
        (tmp_path / "loopd" / "config.toml").write_text(toml)
    return {"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)} | extra


def test_on_by_default_for_ten_minutes(tmp_path: Path) -> None:
    assert daemon_idle(env(tmp_path)) == "600"


def test_the_environment_turns_it_off(tmp_path: Path) -> None:
    for off in ("off", "0", "false", "no", "OFF"):
        assert daemon_idle(env(tmp_path, "[daemon]\nenabled = true\n", LOOPD_DAEMON=off)) is None
    assert daemon_idle(env(tmp_path, LOOPD_DAEMON="on")) == "600"


def test_the_user_file_turns_it_off_or_sets_the_idle_time(tmp_path: Path) -> None:
    assert daemon_idle(env(tmp_path, "[daemon]\nenabled = false\n")) is None
    assert daemon_idle(env(tmp_path, "[daemon]\nidle_seconds = 30\n")) == "30"


def test_a_file_that_does_not_parse_leaves_the_default(tmp_path: Path) -> None:
    assert daemon_idle(env(tmp_path, "[daemon\n")) == "600"
    assert daemon_idle(env(tmp_path, "daemon = 3\n")) == "600"
    assert daemon_idle(env(tmp_path, "[daemon]\nidle_seconds = true\n")) == "600"
    deep = "a = " + "[" * 50_000 + "]" * 50_000 + "\n"  # tomllib: RecursionError
    assert daemon_idle(env(tmp_path, deep)) == "600"


def test_the_daemon_gets_no_credentials() -> None:
    editor = {
        "PATH": "/bin", "HOME": "/h", "LOOPD_HOME": "/d", "LOOPD_DAEMON_IDLE": "5",
        "XDG_RUNTIME_DIR": "/run/user/1", "LC_ALL": "C", "ANTHROPIC_API_KEY": "secret",
        "OPENAI_API_KEY": "secret", "GITHUB_TOKEN": "secret", "AWS_SECRET_ACCESS_KEY": "s",
    }  # fmt: skip
    assert daemon_env(editor) == {
        "PATH": "/bin", "HOME": "/h", "LOOPD_HOME": "/d", "LOOPD_DAEMON_IDLE": "5",
        "XDG_RUNTIME_DIR": "/run/user/1", "LC_ALL": "C", **LOOPD_ITSELF,
    }  # fmt: skip


def test_the_daemon_imports_and_writes_nothing_an_editor_points_it_to() -> None:
    """The first editor's import path and temporary folder would be every later
    editor's: the daemon's import path is where this loopd comes from, alone."""
    editor = {
        "HOME": "/h", "PYTHONPATH": "/editor/a/lib", "PYTHONHOME": "/editor/a",
        "PYTHONSTARTUP": "/editor/a/start.py", "PYTHONUSERBASE": "/editor/a/user",
        "TMPDIR": "/editor/a/tmp", "LD_PRELOAD": "/editor/a/hook.so",
    }  # fmt: skip
    assert daemon_env(editor) == {"HOME": "/h", **LOOPD_ITSELF}


LOOPD_ITSELF = {"PYTHONPATH": str(Path(loopd.__file__).resolve().parents[1])}


def test_a_fifo_as_the_config_does_not_block_an_editors_start(tmp_path: Path) -> None:
    environ = env(tmp_path)
    config = Path(user_config_path(environ))
    config.parent.mkdir(parents=True, exist_ok=True)
    config.unlink(missing_ok=True)
    os.mkfifo(config)
    with released(config) as blocked:
        assert daemon_idle(environ) == "600"
    assert blocked == []
