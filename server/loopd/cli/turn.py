"""One headless turn on a fresh app: what `loopd run` and `loopd demo` share.

The app is built for the turn and closed after it; Ctrl-C cancels the turn (the
manager pairs every announced tool call with a result), so the exit code says how it
ended: `EXIT_CODES` maps the stop reason, anything else is a failure.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.turns import Outcome

EXIT_CODES = {"end_turn": 0, "cancelled": 130}


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
        cancel = lambda: asyncio.ensure_future(app.manager.cancel(view.id))  # noqa: E731
        loop.add_signal_handler(signal.SIGINT, cancel)
        try:
            return await app.manager.prompt(view.id, Prompt((TextBlock(text),)), link)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
    finally:
        await app.aclose()
