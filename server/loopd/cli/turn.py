"""One headless turn on a fresh app: what `loopd run` and `loopd demo` share.

The app is built for the turn and closed after it; Ctrl-C cancels the turn (the
manager pairs every announced tool call with a result), a second Ctrl-C exits at
once, so the exit code says how it ended: `EXIT_CODES` maps the stop reason,
anything else is a failure.
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

from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.turns import Outcome

if TYPE_CHECKING:
    from loopd.sessions.manager import SessionManager

EXIT_CODES = {"end_turn": 0, "cancelled": 130}


def run_headless(main: Coroutine[Any, Any, Outcome]) -> Outcome:
    """`asyncio.run` without its last step, which joins every worker thread: one
    stuck in a read no signal interrupts (a terminal question the person answered
    with Ctrl-C) would keep the process alive after the turn ended. `exit_now` then
    ends the process without waiting for such a thread either."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


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
            exit_now(130)
        self.cancelling = asyncio.ensure_future(self.manager.cancel(self.session_id))


async def run_turn(
    env: dict[str, str],
    cwd: str,
    text: str,
    link: Any,
    runtime: str | None,
    config: dict[str, str],
) -> Outcome:
    from loopd.app import build_app

    app = build_app(env, cwd)
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
            return await app.manager.prompt(view.id, Prompt((TextBlock(text),)), link)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
    finally:
        await app.aclose()
