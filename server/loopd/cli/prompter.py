"""Approval questions on the controlling terminal.

The terminal is opened as a raw file descriptor (`/dev/tty`, read and write, no
buffering layer): a text-mode `open("/dev/tty", "r+")` cannot be used on a real
terminal at all (Python refuses to seek a TTY). It is the controlling terminal rather
than stdin, so `echo prompt | loopd run` still asks the person, and an answer is read
one line at a time so typed-ahead text is not swallowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from typing import TypeVar

from loopd.protocol.approvals import ApprovalDecision

Prompter = Callable[[str], str | None]  # None: the terminal closed (EOF)
T = TypeVar("T")

ANSWERS = {
    "y": ApprovalDecision.ALLOW_ONCE,
    "yes": ApprovalDecision.ALLOW_ONCE,
    "a": ApprovalDecision.ALLOW_ALWAYS,
    "always": ApprovalDecision.ALLOW_ALWAYS,
    "n": ApprovalDecision.REJECT_ONCE,
    "no": ApprovalDecision.REJECT_ONCE,
    "": ApprovalDecision.REJECT_ONCE,  # Enter alone: the safe answer
    "v": ApprovalDecision.REJECT_ALWAYS,
    "never": ApprovalDecision.REJECT_ALWAYS,
}
CHOICES = "[y]es / [a]lways / [n]o / ne[v]er"
MAX_TRIES = 3


def decide(prompter: Prompter, question: str) -> ApprovalDecision:
    """Ask until the answer is one of `ANSWERS` (at most `MAX_TRIES` times); a closed
    terminal or repeated nonsense is a rejection, never a grant."""
    for _ in range(MAX_TRIES):
        answer = prompter(question)
        if answer is None:
            return ApprovalDecision.REJECT_ONCE
        decision = ANSWERS.get(answer.strip().lower())
        if decision is not None:
            return decision
        question = f"Please answer {CHOICES}: "
    return ApprovalDecision.REJECT_ONCE


async def ask_in_background(prompter: Prompter, question: str) -> ApprovalDecision:
    """`decide` on a daemon thread (see `in_background`); an unreadable terminal is a
    rejection."""
    decision = await in_background(lambda: decide(prompter, question))
    return ApprovalDecision.REJECT_ONCE if decision is None else decision


async def read_answer(prompter: Prompter, question: str) -> str | None:
    """One free answer from the terminal (the agent's `ask_user`); None when the
    terminal closed or could not be read."""
    return await in_background(lambda: prompter(question))


async def in_background(read: Callable[[], T | None]) -> T | None:
    """`read` (a terminal read) on a daemon thread. A read from the terminal cannot
    be interrupted, so a turn cancelled while its question waits (Ctrl-C) must not
    wait for that thread: the default executor's would hold the process open until
    someone pressed Enter. An OSError reads as None."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[T | None] = loop.create_future()

    def settle(value: T | None) -> None:
        if not answer.done():
            answer.set_result(value)

    def work() -> None:
        try:
            value = read()
        except OSError:
            value = None
        with contextlib.suppress(RuntimeError):  # the loop is gone: the turn ended
            loop.call_soon_threadsafe(settle, value)

    threading.Thread(target=work, name="loopd-question", daemon=True).start()
    return await answer


def tty_prompter(path: str = "/dev/tty") -> Prompter | None:
    """A prompter on the controlling terminal, or None when there is none."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    if not os.isatty(fd):
        os.close(fd)
        return None

    def ask(question: str) -> str | None:
        os.write(fd, question.encode("utf-8", "replace"))
        return _read_line(fd)

    return ask


def _read_line(fd: int) -> str | None:
    """One line from `fd` (canonical mode delivers whole lines); None at EOF."""
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            return data.decode("utf-8", "replace") if data else None
        data += chunk
    return data.decode("utf-8", "replace")
