"""`ask_user` and `loopd run`: offered on a terminal, absent from a headless run."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from loopd.cli.terminal import TerminalLink
from loopd.protocol.questions import Question
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply
from tests.e2e.conftest import isolated_env, run_loopd

pytestmark = pytest.mark.e2e


def test_a_headless_run_is_not_offered_ask_user(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    fake_llm.script("*", Reply(text="ok"))
    env = isolated_env(tmp_path, fake_llm)
    done = run_loopd(["run", "hi"], env, workspace, start_new_session=True)  # no terminal
    assert done.returncode == 0, done.stderr
    offered = [t["name"] for t in fake_llm.requests[0].body["tools"]]
    assert "ask_user" not in offered and "read" in offered


async def test_on_a_terminal_a_number_picks_a_choice_and_text_is_an_answer() -> None:
    replies = iter(["2", "my own words", ""])
    asked: list[str] = []

    def tty(prompt: str) -> str:
        asked.append(prompt)
        return next(replies) + "\n"

    err = io.StringIO()
    link = TerminalLink(io.StringIO(), err, questions=tty)
    question = Question("s1", "q1", "Which database?", ("sqlite", "postgres"), allow_text=True)
    assert link.can_ask_user()
    assert await link.ask_user(question) == "postgres"
    assert await link.ask_user(question) == "my own words"
    assert await link.ask_user(question) is None
    assert "loopd asks: Which database?\n  1. sqlite\n  2. postgres" in err.getvalue()
    assert asked[0] == "Answer (1-2 or your answer): "
    assert not TerminalLink(io.StringIO(), err).can_ask_user()
