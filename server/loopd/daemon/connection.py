"""One editor connection in the daemon: the editor's own stdin, stdout and stderr
(handed over by its forwarder), its environment and cwd, its app.

Each connection builds its own app (`loopd.app.build_app`) from the editor's
environment and workspace: its runtimes, credentials, config and approver are its
own, over the daemon's one session table. What the connection logs, and what the
server writes to stderr while serving it, goes to the editor's stderr (the
editor's log), through `RoutedStderr`; the daemon's own lines go to its log file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from loopd.daemon.stderr import editor_stderr
from loopd.protocol.errors import ConfigError
from loopd.sessions.starting import Starting, serve_building
from loopd.sessions.table import SessionTable
from loopd.streams.read_ahead import ReadAhead

if TYPE_CHECKING:  # loaded by the connection's build, while `initialize` is answered
    from loopd.acp.handshake import Record
    from loopd.app import App

Speaks = Literal["acp", "lsp"]  # the protocol an editor's connection speaks


@dataclass(frozen=True, slots=True)
class Hello:
    """What a forwarder asks for: checked before anything is built from it."""

    protocol: Speaks
    cwd: str
    env: Mapping[str, str]
    early_key: str | None = None  # what the forwarder looks written answers up under
    read_ahead: ReadAhead | None = None  # what it read of stdin first (and answered)

    @staticmethod
    def of(message: Mapping[str, Any]) -> Hello:
        protocol, cwd, env = message.get("protocol"), message.get("cwd"), message.get("env")
        early = message.get("early") or {}
        if protocol != "acp" and protocol != "lsp":
            raise ConfigError(f"unknown protocol {protocol!r}")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise ConfigError("the forwarder sent no absolute cwd")
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise ConfigError("the forwarder's environment is not a map of strings")
        key = early.get("key") if isinstance(early, dict) else None
        try:
            read = ReadAhead.of(early.get("readAhead")) if isinstance(early, dict) else None
        except ValueError as err:
            raise ConfigError(str(err)) from None
        return Hello(protocol, cwd, env, key if isinstance(key, str) else None, read)


async def serve_editor(
    hello: Hello,
    fds: list[int],
    table: SessionTable,
    retire: Callable[[App], None],
    record: Record | None = None,
    built: Callable[[], None] = lambda: None,
) -> None:
    """Serve one editor on its descriptors until it hangs up (or this is cancelled),
    then close them: the editor sees its stdout close. The app goes to `retire`,
    which closes it once no live session runs on it. `record` writes down the ACP
    `initialize` answer for the next forwarders (`loopd.daemon.early`); `built` is
    called once the app is built, or failed to."""
    stdin_fd, stdout_fd, stderr_fd = fds
    err = os.fdopen(stderr_fd, "w", buffering=1, errors="backslashreplace")
    out = os.fdopen(stdout_fd, "wb", buffering=0)
    token = editor_stderr.set(err)
    try:
        app = await serve_building(
            lambda: _build(hello, table, built), _server(hello, stdin_fd, out, record)
        )
        if app is not None:
            retire(app)
    finally:
        editor_stderr.reset(token)
        os.close(stdin_fd)
        for stream in (out, err):
            with contextlib.suppress(OSError):
                stream.close()


def _build(hello: Hello, table: SessionTable, built: Callable[[], None]) -> App:
    from loopd.app import build_app  # in the build's thread, as in-process

    try:
        return build_app(hello.env, hello.cwd, editor=True, table=table)
    finally:
        built()


def _server(
    hello: Hello, stdin_fd: int, out: BinaryIO, record: Record | None
) -> Callable[[Starting], Any]:
    if hello.protocol == "acp":
        from loopd.acp.handshake import Handshake
        from loopd.acp.server import serve_streams as serve_acp

        start = Handshake(hello.read_ahead, record)
        return lambda manager: serve_acp(manager, stdin_fd, out, start)
    from loopd.lsp.server import serve_streams as serve_lsp

    return lambda manager: serve_lsp(manager, stdin_fd, out)
