"""`loopd run` and the other CLI commands, as subprocesses against the loopback fake
model: the real provider, engine, tools, policy, sandbox and store."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import LOOPD, isolated_env

pytestmark = pytest.mark.e2e


def loopd(
    args: list[str], env: dict[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOOPD, *args], env=env, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60
    )


def edit_script(fake: FakeLLMServer) -> None:
    fake.script(
        "*",
        Reply(text="Reading.", tool_calls=(ScriptedCall("read", {"path": "app.py"}),)),
        Reply(
            text="Fixing.",
            tool_calls=(
                ScriptedCall("edit", {"path": "app.py", "old_string": "1 + 1", "new_string": "2"}),
            ),
        ),
        Reply(text="All done."),
    )


def test_run_edits_a_file_with_yes(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("x = 1 + 1\n")
    edit_script(fake_llm)
    done = loopd(["run", "simplify app.py", "--yes"], isolated_env(tmp_path, fake_llm), workspace)

    assert done.returncode == 0, done.stderr
    assert (workspace / "app.py").read_text() == "x = 2\n"
    assert done.stdout.split() == ["Reading.", "Fixing.", "All", "done."]
    assert "✓ Edit app.py" in done.stderr
    second = fake_llm.requests[1].body["messages"]
    assert "x = 1 + 1" in json.dumps(second[-1])  # the model saw the file's content


def test_without_a_terminal_or_yes_approvals_are_rejected(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("x = 1 + 1\n")
    edit_script(fake_llm)
    done = loopd(["run", "simplify app.py"], isolated_env(tmp_path, fake_llm), workspace)

    assert done.returncode == 0, done.stderr
    assert (workspace / "app.py").read_text() == "x = 1 + 1\n"
    assert "Rejected: Edit app.py (no terminal to ask; pass --yes to allow)" in done.stderr
    results = json.dumps(fake_llm.requests[2].body["messages"][-1])
    assert "rejected" in results


def test_json_lines_and_prompt_from_stdin(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    fake_llm.script("*", Reply(text="hi there"))
    done = loopd(["run", "--json"], isolated_env(tmp_path, fake_llm), workspace, stdin="hello\n")

    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [line["update"]["sessionUpdate"] for line in lines[:-1]]
    assert kinds[0] == "session_info_update"
    assert "agent_message_chunk" in kinds
    (usage,) = [line["update"] for line in lines[:-1] if "used" in line["update"]]
    assert usage["sessionUpdate"] == "usage_update"
    assert (usage["used"], usage["size"]) == (19, 200_000)  # the catalog's window
    assert usage["cost"]["currency"] == "USD" and usage["cost"]["amount"] > 0
    assert lines[-1]["stopReason"] == "end_turn"
    assert fake_llm.requests[0].body["messages"][0]["content"][0]["text"] == "hello\n"


def test_sessions_are_listed_shown_and_deleted(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path, fake_llm)
    fake_llm.script("*", Reply(text="an answer"))
    assert loopd(["run", "a question"], env, workspace).returncode == 0

    listed = json.loads(loopd(["sessions", "list", "--json"], env, workspace).stdout)
    assert [(s["cwd"], s["title"]) for s in listed] == [(str(workspace), "a question")]
    shown = loopd(["sessions", "show", listed[0]["id"]], env, workspace).stdout
    assert "a question" in shown and "an answer" in shown
    assert loopd(["sessions", "delete", listed[0]["id"]], env, workspace).returncode == 0
    assert json.loads(loopd(["sessions", "list", "--json"], env, workspace).stdout) == []
    missing = loopd(["sessions", "show", "nope"], env, workspace)
    assert missing.returncode == 1 and "no session 'nope'" in missing.stderr


def test_catalog_and_version(fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path) -> None:
    env = isolated_env(tmp_path, fake_llm)
    catalog = json.loads(loopd(["catalog", "--json"], env, workspace).stdout)
    names = [entry["name"] for entry in catalog["entries"]]
    assert "anthropic" in names and catalog["default"] == "anthropic"
    version = loopd(["--version"], env, workspace)
    assert version.returncode == 0 and version.stdout.startswith("loopd ")


def test_demo_runs_the_whole_pipeline(workspace: Path, tmp_path: Path) -> None:
    done = loopd(["demo"], isolated_env(tmp_path, None), workspace)
    assert done.returncode == 0, done.stderr
    assert "SCRIPTED" in done.stderr
    assert 'print(f"Hello, {name}!")' in done.stderr


def test_a_session_records_its_runtime_identity(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    from loopd.store.sqlite import SqliteStore

    fake_llm.script("*", Reply(text="ok"))
    env = isolated_env(tmp_path, fake_llm)
    assert (
        loopd(
            ["run", "hi", "--model", "claude-x", "--runtime", "native"], env, workspace
        ).returncode
        == 0
    )
    store = SqliteStore(tmp_path / "data" / "sessions.db")
    (record,) = store.list_sessions().sessions
    assert record.runtime["name"] == "anthropic"
    identity = record.runtime["identity"]
    assert (identity["harness"], identity["model"]) == ("native", "claude-x")
    assert identity["agent"] == "main"  # the session's own agent role
    assert identity["catalog_digest"].startswith("sha256:")
    assert fake_llm.requests[0].body["model"] == "claude-x"


def test_command_output_is_folded_to_its_last_lines_and_usage_is_reported(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    command = "for i in $(seq 1 20); do echo line-$i; done"
    fake_llm.script(
        "*", Reply(tool_calls=(ScriptedCall("bash", {"command": command}),)), Reply(text="ok")
    )
    done = loopd(["run", "count", "--yes"], isolated_env(tmp_path, fake_llm), workspace)
    assert done.returncode == 0, done.stderr
    assert "  … 14 earlier lines\n  line-15\n" in done.stderr
    assert "  line-20\n\n  Exit code: 0\n" in done.stderr
    assert "\x1b" not in done.stderr  # no colour, no spinner: stderr is not a terminal
    # the session's cost too: the default model's price is in loopd's catalogue
    assert done.stderr.rstrip().splitlines()[-1] == "tokens: 24 in · 14 out · $0.0003"
    assert done.stdout == "ok\n"
