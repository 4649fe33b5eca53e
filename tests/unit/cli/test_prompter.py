"""The approval prompter on a real pseudo-terminal: the question is written to the
terminal, the typed line is the answer, anything unclear is a rejection."""

from __future__ import annotations

import os
import select
from collections.abc import Iterator

import pytest

from loopd.cli.prompter import MAX_TRIES, decide, tty_prompter
from loopd.protocol.approvals import ApprovalDecision


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    master, slave = os.openpty()
    yield master, os.ttyname(slave)
    os.close(master)
    os.close(slave)


def test_the_question_goes_to_the_terminal_and_the_typed_line_comes_back(
    terminal: tuple[int, str],
) -> None:
    master, path = terminal
    ask = tty_prompter(path)
    assert ask is not None
    os.write(master, b"always\n")
    assert ask("Allow it? ") == "always\n"
    assert b"Allow it? " in _read_until(master, b"Allow it? ")  # after the typed line's echo


def _read_until(master: int, wanted: bytes) -> bytes:
    """What the terminal shows, read until `wanted` appears: the line discipline may hand
    the echo and the question over in separate reads (under load it does)."""
    shown = b""
    while wanted not in shown:
        ready, _, _ = select.select([master], [], [], 10)
        if not ready:
            break
        shown += os.read(master, 1024)
    return shown


def test_a_file_that_is_not_a_terminal_gives_no_prompter(tmp_path: os.PathLike[str]) -> None:
    plain = os.path.join(tmp_path, "not-a-tty")
    open(plain, "w").close()
    assert tty_prompter(plain) is None
    assert tty_prompter(os.path.join(tmp_path, "missing")) is None


@pytest.mark.parametrize(
    ("typed", "decision"),
    [
        (["y"], ApprovalDecision.ALLOW_ONCE),
        (["YES "], ApprovalDecision.ALLOW_ONCE),
        (["a"], ApprovalDecision.ALLOW_ALWAYS),
        (["n"], ApprovalDecision.REJECT_ONCE),
        ([""], ApprovalDecision.REJECT_ONCE),
        (["v"], ApprovalDecision.REJECT_ALWAYS),
        (["never"], ApprovalDecision.REJECT_ALWAYS),
        (["what?", "y"], ApprovalDecision.ALLOW_ONCE),
        (["?"] * MAX_TRIES + ["y"], ApprovalDecision.REJECT_ONCE),
        ([None], ApprovalDecision.REJECT_ONCE),  # the terminal closed
    ],
)
def test_answers(typed: list[str | None], decision: ApprovalDecision) -> None:
    answers = iter(typed)
    questions: list[str] = []

    def prompter(question: str) -> str | None:
        questions.append(question)
        return next(answers)

    assert decide(prompter, "Allow? ") == decision
    assert questions[0] == "Allow? "
    assert all(q.startswith("Please answer") for q in questions[1:])
