"""A session manager that may still be starting.

`loopd acp` and `loopd lsp` answer `initialize` at once and build the app (catalog
discovery runs each CLI's `--version`, the store opens) in a thread meanwhile. The
protocol adapters hold the manager as `Starting`: the manager itself, or a future
of it. Requests that need sessions wait for it; if the build failed, each is
answered with the reason instead.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias, TypeVar

from loopd.protocol.errors import LoopdError
from loopd.sessions.manager import SessionManager

Starting: TypeAlias = SessionManager | asyncio.Future[SessionManager]


class Built(Protocol):
    """What a build makes (`loopd.app.App`): the manager the protocol serves."""

    @property
    def manager(self) -> SessionManager: ...


App = TypeVar("App", bound=Built)


class StartFailed(LoopdError):
    """The app could not be built; the message says why."""


def started(manager: Starting) -> SessionManager | None:
    """The manager if it is ready, else None (still starting, or failed)."""
    if isinstance(manager, SessionManager):
        return manager
    return manager.result() if manager.done() and manager.exception() is None else None


async def wait_started(manager: Starting) -> SessionManager:
    """The manager, once it is ready. Raises `StartFailed` if it never will be.
    Shielded: a cancelled request does not cancel the build."""
    if isinstance(manager, SessionManager):
        return manager
    try:
        return await asyncio.shield(manager)
    except Exception as err:
        raise StartFailed(f"loopd could not start: {err}") from err


async def serve_building(
    build: Callable[[], App], serve: Callable[[Starting], Awaitable[None]]
) -> App | None:
    """Serve a protocol on a manager still being built, in a thread (catalog
    discovery runs each CLI's `--version`, the store opens meanwhile), so the
    editor's `initialize` is answered at once; the first request that needs sessions
    waits for it. Returns the app once served, for the caller to close; None when
    the build failed (said on stderr, and in every answer that needed it)."""
    building = asyncio.create_task(asyncio.to_thread(build))
    manager = asyncio.ensure_future(_manager_of(building))
    try:
        await serve(manager)
    finally:
        app: App | None
        try:
            app = await building
        except Exception:
            app = None
    return app


async def _manager_of(building: Awaitable[App]) -> SessionManager:
    try:
        return (await building).manager
    except Exception as err:
        sys.stderr.write(f"loopd: could not start: {err}\n")
        raise
