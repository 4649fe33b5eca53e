"""`loopd run` and `loopd demo` on a real pseudo-terminal: the approval question is
asked on the terminal and its answer obeyed, what is shown is escaped, Ctrl-C
cancels with a note and exit code 130."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.cli.pty_process import PtyProcess
from tests.e2e.conftest import LOOPD, isolated_env

pytestmark = pytest.mark.e2e


def edit_script(fake: FakeLLMServer, times: int = 1) -> None:
    edit = ScriptedCall("edit", {"path": "app.py", "old_string": "1 + 1", "new_string": "2"})
    fake.script("*", *[Reply(text="Fixing.", tool_calls=(edit,))] * times, Reply(text="Done."))


@pytest.mark.parametrize(
    ("answer", "edited", "said"),
    [
        ("y\r", True, "allowed"),
        ("a\r", True, "allowed"),
        ("n\r", False, "rejected"),
        ("v\r", False, "rejected"),
        ("\r", False, "rejected"),  # Enter alone is the safe answer
        ("maybe\rnever\r", False, "rejected"),  # asked again, then a real answer
    ],
)
def test_the_approval_is_asked_on_the_terminal_and_obeyed(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path, answer: str, edited: bool, said: str
) -> None:
    (workspace / "app.py").write_text("x = 1 + 1\n")
    edit_script(fake_llm)
    term = PtyProcess([*LOOPD, "run", "simplify"], isolated_env(tmp_path, fake_llm), workspace)
    term.expect(r"Allow Edit app\.py\? \[y\]es / \[a\]lways / \[n\]o / ne\[v\]er: ")
    assert "-x = 1 + 1" in term.output and "+x = 2" in term.output  # the diff, before asking
    term.type(answer)
    assert term.wait() == 0, term.output
    assert term.output.count("+x = 2") == 1  # the diff asked about is not repeated after
    assert ((workspace / "app.py").read_text() == "x = 2\n") is edited
    result = json.dumps(fake_llm.requests[1].body["messages"][-1])
    assert ("rejected" in result) is (said == "rejected")


def test_always_reject_is_remembered_for_the_session(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("x = 1 + 1\n")
    edit_script(fake_llm, times=2)
    term = PtyProcess([*LOOPD, "run", "simplify"], isolated_env(tmp_path, fake_llm), workspace)
    term.expect(r"ne\[v\]er: ")
    term.type("v\r")
    assert term.wait() == 0, term.output
    assert term.output.count("ne[v]er: ") == 1  # the second edit was not asked about
    assert (workspace / "app.py").read_text() == "x = 1 + 1\n"
    assert "Denied by policy" in json.dumps(fake_llm.requests[2].body["messages"][-1])


def test_control_characters_in_what_is_approved_are_shown_escaped(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    # A command whose title would erase its own line and print a harmless one instead.
    sneaky = "rm -rf ~/x \x1b[2K\rls \u202e"
    fake_llm.script(
        "*",
        Reply(tool_calls=(ScriptedCall("bash", {"command": sneaky}),)),
        Reply(text="ok \x1b]0;owned\x07"),
    )
    env = isolated_env(tmp_path, fake_llm)
    term = PtyProcess([*LOOPD, "run", "--mode", "plan", "tidy"], env, workspace)
    term.expect(r"ne\[v\]er: ")
    term.type("n\r")
    assert term.wait() == 0, term.output
    assert "\x1b[2K" not in term.output and "\u202e" not in term.output
    assert "\x1b]0;" not in term.output
    assert r"rm -rf ~/x \x1b[2K\x0dls \u202e" in term.output
    assert r"ok \x1b]0;owned\x07" in term.output


def test_ctrl_c_cancels_with_a_note_and_exit_code_130(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    fake_llm.script("*", Reply(text="Thinking about it", pause_after=3, gate="hold"))
    term = PtyProcess([*LOOPD, "run", "hi"], isolated_env(tmp_path, fake_llm), workspace)
    try:
        term.expect("Thinking")
        term.type("\x03")
        assert term.wait() == 130, term.output
    finally:
        fake_llm.release("hold")
    assert term.output.endswith("\r\nCancelled.\r\n")  # on a line of its own


def test_the_demo_asks_on_a_terminal(tmp_path: Path) -> None:
    env = isolated_env(tmp_path, None)
    term = PtyProcess([*LOOPD, "demo"], env, tmp_path)
    term.expect(r"Allow Edit greet\.py\? .*: ")
    term.type("y\r")
    assert term.wait() == 0, term.output
    assert "greet(sys.argv[1]" in term.output
    assert "the demo says yes" not in term.output


def test_on_a_terminal_diffs_are_coloured_and_a_spinner_waits(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("x = 1 + 1\n")
    edit_script(fake_llm)
    term = PtyProcess([*LOOPD, "run", "--yes", "fix"], isolated_env(tmp_path, fake_llm), workspace)
    assert term.wait() == 0, term.output
    assert "\x1b[31m-x = 1 + 1\x1b[0m" in term.output and "\x1b[32m+x = 2\x1b[0m" in term.output
    assert "--- a/app.py" in term.output  # workspace-relative, not the absolute path
    assert "⠋ Waiting for the model" in term.output
    assert "tokens: " in term.output


def test_no_color_turns_colour_off_on_a_terminal(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("x = 1 + 1\n")
    edit_script(fake_llm)
    env = isolated_env(tmp_path, fake_llm, NO_COLOR="1")
    term = PtyProcess([*LOOPD, "run", "--yes", "fix"], env, workspace)
    assert term.wait() == 0, term.output
    assert "\x1b[3" not in term.output and "\r\n-x = 1 + 1\r\n" in term.output


def test_ctrl_c_at_the_question_cancels_without_waiting_for_an_answer(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("x = 1 + 1\n")
    edit_script(fake_llm)
    term = PtyProcess([*LOOPD, "run", "simplify"], isolated_env(tmp_path, fake_llm), workspace)
    term.expect(r"ne\[v\]er: ")
    term.type("\x03")
    assert term.wait(timeout=20) == 130, term.output
    assert re.search(r"(\r\n|\r\x1b\[K)Cancelled\.\r\n", term.output)  # at a line's start
    assert (workspace / "app.py").read_text() == "x = 1 + 1\n"
