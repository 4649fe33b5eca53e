"""`loopd config path|show|schema`, `loopd completion` and `loopd sessions` with
nothing stored, as subprocesses."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli.test_run import loopd
from tests.e2e.conftest import isolated_env

pytestmark = pytest.mark.e2e


def test_config_path_names_both_files_found_or_not(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".loopd").mkdir()
    (workspace / ".loopd" / "config.toml").write_text("[defaults]\nmode = 'plan'\n")
    done = loopd(["config", "path"], isolated_env(tmp_path, None), workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"user       {tmp_path / 'config' / 'loopd' / 'config.toml'}  (not found)",
        f"workspace  {workspace / '.loopd' / 'config.toml'}  (found)",
    ]


def test_config_show_is_the_merged_validated_config(workspace: Path, tmp_path: Path) -> None:
    user = tmp_path / "config" / "loopd" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[limits]\nmax_iterations = 9\nmax_parallel = 2\n")
    (workspace / ".loopd").mkdir()
    (workspace / ".loopd" / "config.toml").write_text("[limits]\nmax_parallel = 4\n")
    env = isolated_env(tmp_path, None)
    untrusted = json.loads(loopd(["config", "show"], env, workspace).stdout)
    assert untrusted["limits"]["max_parallel"] == 2  # raising a limit needs trust
    assert untrusted["workspace"]["ignored"] == ["limits.max_parallel"]
    assert loopd(["trust"], env, workspace).returncode == 0
    done = loopd(["config", "show"], env, workspace)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["limits"]["max_iterations"] == 9 and shown["limits"]["max_parallel"] == 4
    assert shown["workspace"]["state"] == "trusted"


def test_config_show_of_a_bad_file_is_a_config_error(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".loopd").mkdir()
    (workspace / ".loopd" / "config.toml").write_text("[limits]\nmax_parallel = 'many'\n")
    env = isolated_env(tmp_path, None)
    assert loopd(["config", "show"], env, workspace).returncode == 0  # untrusted: ignored
    assert loopd(["trust"], env, workspace).returncode == 0
    done = loopd(["config", "show"], env, workspace)
    assert done.returncode == 2
    assert "config.toml: limits.max_parallel: must be a whole number" in done.stderr


def test_config_schema_is_json_schema(workspace: Path, tmp_path: Path) -> None:
    done = loopd(["config", "schema"], isolated_env(tmp_path, None), workspace)
    schema = json.loads(done.stdout)
    assert schema["$schema"].endswith("2020-12/schema")
    tables = {
        *("defaults", "providers", "runtimes", "limits", "approvals", "delegate", "done"),
        *("sandbox", "agents", "daemon", "checkpoints"),
    }
    assert set(schema["properties"]) == tables
    role = schema["properties"]["agents"]["additionalProperties"]["properties"]
    assert set(role) == {"runtimes", "default", "model", "effort"}


def test_completion_prints_a_script_bash_can_load(workspace: Path, tmp_path: Path) -> None:
    done = loopd(["completion", "bash"], isolated_env(tmp_path, None), workspace)
    assert done.returncode == 0
    loaded = subprocess.run(
        ["bash", "-c", f"{done.stdout}\ncomplete -p loopd"], capture_output=True, text=True
    )
    assert loaded.stdout.strip() == "complete -o default -F _loopd loopd"


def test_sessions_with_none_stored_says_so(workspace: Path, tmp_path: Path) -> None:
    done = loopd(["sessions"], isolated_env(tmp_path, None), workspace)
    assert done.returncode == 0
    assert done.stdout == ""
    assert done.stderr == "No sessions stored.\n"


def test_catalog_text_from_a_config_file_is_escaped(workspace: Path, tmp_path: Path) -> None:
    user = tmp_path / "config" / "loopd" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(
        '[providers.local]\nkind = "openai_chat"\nmodels = ["qwen"]\n'
        'base_url = "http://127.0.0.1:9/v1\\u001b[2K\\rsafe"\n'
    )
    done = loopd(["catalog"], isolated_env(tmp_path, None), workspace)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\r" not in done.stdout
    assert r"/v1\x1b[2Ksafe" in done.stdout  # urlsplit already drops the \r
