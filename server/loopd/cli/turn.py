"""One headless turn on a fresh app: what `loopd run` and `loopd demo` share.

The app is built for the turn and closed after it; Ctrl-C cancels the turn (the
manager pairs every announced tool call with a result), so the exit code says how it
ended: `EXIT_CODES` maps the stop reason, anything else is a failure.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING, Any

from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.turns import Outcome

if TYPE_CHECKING:
    from loopd.config import Config

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
            return await app.manager.prompt(view.id, Prompt((TextBlock(text),)), link)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
    finally:
        await app.aclose()


def tell_workspace(config: Config) -> None:
    """Say once, on stderr, which workspace settings were ignored (never on stdout:
    it carries `--json` output)."""
    if config.workspace is not None and config.workspace.notice:
        print(f"loopd: {config.workspace.notice}", file=sys.stderr)
