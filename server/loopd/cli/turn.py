"""One headless turn on a fresh app: what `loopd run` and `loopd demo` share.

The app is built for the turn and closed after it; Ctrl-C cancels the turn (the
manager pairs every announced tool call with a result) and a second Ctrl-C exits at
once, so the exit code says how it ended (`exit_code`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from loopd.cli.exits import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK
from loopd.cli.terminal import TerminalLink
from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.turns import Outcome

if TYPE_CHECKING:
    from loopd.sessions.manager import SessionManager


def exit_code(outcome: Outcome) -> int:
    """0 only for a turn that ended normally: a provider error (which the runtime
    reports as an ended turn with `error` set), a limit or a refusal is a failure, and
    so is a turn that ended incomplete or with a `failed` seal (done criteria unmet):
    not a success a script may build on."""
    if outcome.stop_reason == "cancelled":
        return EXIT_CANCELLED
    seal = outcome.verification
    if seal is not None and seal.failed:
        return EXIT_FAILED
    if outcome.error is None and outcome.stop_reason == "end_turn":
        return EXIT_OK
    return EXIT_FAILED


def run_headless(main: Coroutine[Any, Any, Outcome]) -> Outcome:
    """`asyncio.run` without its last step, which joins every worker thread: one
    stuck in a call no signal interrupts would keep the process alive after the turn
    ended. `exit_now` then ends the process without waiting for such a thread.

    As `asyncio.run` does, what is still running is cancelled and awaited before the
    async generators are closed; and closing them may start tasks of its own (a
    generator collected meanwhile is closed by a task), which are awaited too, so
    none is destroyed pending ("Task was destroyed but it is pending!")."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            _finish_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            _finish_tasks(loop)
        finally:
            loop.close()


def _finish_tasks(loop: asyncio.AbstractEventLoop) -> None:
    tasks = asyncio.all_tasks(loop)
    if not tasks:
        return  # (a gather of nothing would belong to no loop of ours)
    for task in tasks:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


def exit_now(code: int) -> NoReturn:
    """End the process now, output flushed, without joining worker threads."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


@dataclass(slots=True)
class Interrupts:
    """Ctrl-C during a turn. The first cancels it: every announced tool call gets a
    result and the exit code is 130 once the turn has ended. The second exits at
    once with 130, for a wait that cancellation cannot reach."""

    manager: SessionManager
    session_id: str
    presses: int = 0
    cancelling: asyncio.Future[None] | None = None

    def __call__(self) -> None:
        self.presses += 1
        if self.presses > 1:
            print("loopd: interrupted", file=sys.stderr)
            exit_now(EXIT_CANCELLED)
        self.cancelling = asyncio.ensure_future(self.manager.cancel(self.session_id))


async def run_turn(
    env: dict[str, str],
    cwd: str,
    text: str,
    link: TerminalLink,
    runtime: str | None,
    config: dict[str, str],
) -> Outcome:
    from loopd.app import build_app
    from loopd.cli.trust import tell_workspace

    app = build_app(env, cwd)
    tell_workspace(app.config)
    try:
        if runtime is not None:
            config["runtime"] = app.catalog.catalog.select(runtime).name
        view = await app.manager.new_session(cwd, link, config=config)
        for option_id, value in config.items():
            if option_id != "runtime":
                await app.manager.set_config(view.id, option_id, value)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, Interrupts(app.manager, view.id))
        try:
            outcome = await app.manager.prompt(view.id, Prompt((TextBlock(text),)), link)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            if link.status is not None:
                link.status.clear()
        link.finish(outcome)
        return outcome
    finally:
        await app.aclose()
