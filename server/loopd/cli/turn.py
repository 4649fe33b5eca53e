"""One headless turn on a fresh app: what `loopd run` and `loopd demo` share.

The app is built for the turn and closed after it; Ctrl-C cancels the turn (the
manager pairs every announced tool call with a result), so the exit code says how it
ended (`exit_code`).
"""

from __future__ import annotations

import asyncio
import signal

from loopd.cli.exits import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK
from loopd.cli.terminal import TerminalLink
from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.turns import Outcome


def exit_code(outcome: Outcome) -> int:
    """0 only for a turn that ended normally: a provider error (which the runtime
    reports as an ended turn with `error` set), a limit or a refusal is a failure."""
    if outcome.stop_reason == "cancelled":
        return EXIT_CANCELLED
    if outcome.error is None and outcome.stop_reason == "end_turn":
        return EXIT_OK
    return EXIT_FAILED


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
        cancel = lambda: asyncio.ensure_future(app.manager.cancel(view.id))  # noqa: E731
        loop.add_signal_handler(signal.SIGINT, cancel)
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
