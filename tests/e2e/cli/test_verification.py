"""The verification seal through `loopd run`: a workspace `[done]` table, the real
engine, tools, sandbox and criteria, the loopback fake model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import DONE_TOML, isolated_env, run_loopd, trusted_config

pytestmark = pytest.mark.e2e


def write(path: str, content: str) -> Reply:
    return Reply(tool_calls=(ScriptedCall("write", {"path": path, "content": content}),))


def run(workspace: Path, tmp_path: Path, fake: FakeLLMServer, *flags: str) -> Any:
    env = isolated_env(tmp_path, fake)
    trusted_config(workspace, env)
    return run_loopd(["run", "make app.txt good", "--yes", *flags], env, workspace)


def test_an_incomplete_turn_is_a_json_event_a_line_and_exit_1(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    fake_llm.script(
        "*",
        write("app.txt", "bad\n"),
        Reply(text="Done."),
        write("tests/test_app.py", "def test(): pass\n"),
        Reply(text="Really done."),  # the unmet set did not shrink: incomplete
    )
    done = run(workspace, tmp_path, fake_llm, "--json")

    assert done.returncode == 1, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    seals = [
        u["update"]["_meta"]["loopd"]["verification"]
        for u in lines[:-1]
        if u["update"]["sessionUpdate"] == "session_info_update" and "_meta" in u["update"]
    ]
    assert len(seals) == 1 and seals[0]["incomplete"] and seals[0]["unmet"] == ["content"]
    assert seals[0]["protectedWrites"] == ["tests/test_app.py"]
    end = lines[-1]
    assert end["stopReason"] == "end_turn"
    assert end["verification"]["seal"] == "failed" and end["verification"]["incomplete"]
    said = "".join(
        u["update"]["content"]["text"]
        for u in lines[:-1]
        if u["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert "Not done: content unmet (check 1); continuing." in said
    assert "Verification incomplete: unmet content" in said
    assert "protected files written: tests/test_app.py" in said
    reentry = json.dumps(fake_llm.requests[2].body["messages"][-1])
    assert "Not done yet" in reentry and "## content (exit code 1)" in reentry


def test_a_passing_turn_says_so_and_exits_0(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    fake_llm.script("*", write("app.txt", "good\n"), Reply(text="Done."))
    done = run(workspace, tmp_path, fake_llm)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Done.\n"  # the answer alone: loopd's own lines go to stderr
    assert "Verification passed" in done.stderr
    assert "Check content: `grep -q good app.txt`" in done.stderr


BROKEN_TOML = """\
[done]
enabled = true
max_stall_cycles = 1

[[done.criteria]]
name = "content"
command = "./check.sh"
"""

TWO_TOML = (
    DONE_TOML
    + """
[[done.criteria]]
name = "lint"
command = "no-such-linter-xyz --check"
"""
)


def seal_of(done: Any) -> dict[str, Any]:
    verification: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])["verification"]
    return verification


def test_a_criterion_the_turn_deleted_fails_the_run(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    """It could run when the turn began: deleting it is no way to a clean exit."""
    check = workspace / "check.sh"
    check.write_text("#!/bin/sh\ngrep -q good app.txt\n")
    check.chmod(0o755)
    rm = Reply(tool_calls=(ScriptedCall("bash", {"command": "rm check.sh"}),))
    fake_llm.script("*", rm, Reply(text="Done."), Reply(text="Done, really."))
    env = isolated_env(tmp_path, fake_llm)
    trusted_config(workspace, env, BROKEN_TOML)
    done = run_loopd(["run", "make app.txt good", "--yes", "--json"], env, workspace)
    assert done.returncode == 1, done.stderr
    verification = seal_of(done)
    assert verification["seal"] == "failed"
    [criterion] = verification["criteria"]
    assert criterion["state"] == "unmet" and criterion["exitCode"] == 127


def test_one_met_and_one_unavailable_is_not_passed(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    fake_llm.script("*", write("app.txt", "good\n"), Reply(text="Done."))
    env = isolated_env(tmp_path, fake_llm)
    trusted_config(workspace, env, TWO_TOML)
    done = run_loopd(["run", "make app.txt good", "--yes", "--json"], env, workspace)
    verification = seal_of(done)
    assert [c["state"] for c in verification["criteria"]] == ["met", "unavailable"]
    assert verification["seal"] == "unavailable"
    assert done.returncode == 0, done.stderr  # nothing failed; nothing was proven either
