"""The CLI subcommands, each a thin client of the app built in `loopd.app`."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopd.cli.render import escape
from loopd.protocol.errors import ConfigError

if TYPE_CHECKING:
    from loopd.app import App
    from loopd.sessions.starting import Starting
    from loopd.store.sqlite import SqliteStore


def run(args: argparse.Namespace) -> int:
    cwd = workspace(args.cwd)
    text = args.prompt if args.prompt is not None else sys.stdin.read()
    if not text.strip():
        raise ConfigError("no prompt: pass one as an argument or on stdin")
    from loopd.cli.exits import EXIT_CANCELLED
    from loopd.cli.prompter import tty_prompter
    from loopd.cli.terminal import terminal_link
    from loopd.cli.turn import exit_code, exit_now, run_headless, run_turn

    tty = tty_prompter()  # the agent's questions are asked even with --yes
    prompter = None if args.yes else tty
    link = terminal_link(cwd, prompter, as_json=args.json, assume_yes=args.yes, questions=tty)
    config = {k: v for k, v in (("mode", args.mode), ("model", args.model)) if v}
    outcome = run_headless(run_turn(dict(os.environ), cwd, text, link, args.runtime, config))
    seal = outcome.verification
    if args.json:
        end: dict[str, Any] = {"stopReason": outcome.stop_reason, "turnId": outcome.turn_id}
        if outcome.error:
            end["error"] = outcome.error
        if seal is not None:
            end["verification"] = seal.to_wire()
        print(json.dumps(end))
        if outcome.error:
            print(f"loopd: {outcome.error}", file=sys.stderr)
    if exit_code(outcome) == EXIT_CANCELLED:
        exit_now(EXIT_CANCELLED)  # a worker thread the cancel could not reach must not hold it
    return exit_code(outcome)


def workspace(path: str) -> str:
    """`--cwd` canonicalised, and checked before anything is built or stored."""
    real = os.path.realpath(path)
    if not os.path.exists(real):
        raise ConfigError(f"--cwd {path!r}: no such folder")
    if not os.path.isdir(real):
        raise ConfigError(f"--cwd {path!r}: not a folder")
    return real


def acp(args: argparse.Namespace) -> int:
    """`initialize` is answered while the app is still being built (see
    `_serve_while_building`). `loopd acp login` is `loopd login`: what an editor runs
    for the terminal auth method loopd declares."""
    if args.then == "login":
        from loopd.cli.login import login

        return login(os.environ)
    if args.remote is not None:
        from loopd.remote.bridge import bridge_command

        return bridge_command(args)
    code = _forwarded("acp", args)
    if code is not None:
        return code
    from loopd.acp.server import serve_stdio
    from loopd.streams.stdio import protect_stdout

    out = protect_stdout()  # before anything else can print: stdout is the protocol's
    _serve_while_building(lambda manager: serve_stdio(manager, out))
    return 0


def lsp(args: argparse.Namespace) -> int:
    """As `loopd acp`: `initialize` is answered while the app is still being built."""
    tcp: str | None = args.tcp
    if args.remote is not None:
        if tcp is not None:
            raise ConfigError("--remote relays stdio: it takes no --tcp")
        from loopd.remote.lsp_bridge import lsp_bridge_command

        return lsp_bridge_command(args)
    address = None
    if tcp is not None:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"--tcp wants HOST:PORT, got {tcp!r}")
        address = (host, int(port))
    code = None if address else _forwarded("lsp", args)
    if code is not None:
        return code
    from loopd.lsp.server import serve
    from loopd.streams.stdio import protect_stdout

    out = protect_stdout() if address is None else None  # stdout is the protocol's
    _serve_while_building(lambda manager: serve(manager, address, out))
    return 0


def _forwarded(protocol: str, args: argparse.Namespace) -> int | None:
    """The exit status of the connection served by the daemon, or None to serve
    here (`--no-daemon`, `LOOPD_DAEMON=off`, or no daemon could serve it)."""
    if args.no_daemon:
        return None
    from loopd.daemon.forward import forward

    return forward(protocol)


def _serve_while_building(serve: Callable[[Starting], Awaitable[None]]) -> None:
    """Serve a protocol while the app is built (see `serve_building`), then close it."""
    from loopd.sessions.starting import serve_building

    async def main() -> None:
        app = await serve_building(_build_editor_app, serve)
        if app is not None:
            await app.aclose()

    asyncio.run(main())
    gc.freeze()  # the sessions are closed and the store too: exit without collecting


def _build_editor_app() -> App:
    from loopd.app import build_app  # imported here, off the thread that answers

    app = build_app(dict(os.environ), os.getcwd(), editor=True)
    # What the imports and the build made lives as long as the process: the garbage
    # collector need never walk it again. A full collection over it (the protocol
    # SDK's schema classes, mostly) costs ~50 ms wherever it falls, mid-turn too, and
    # the interpreter's collections at exit cost ~150 ms after stdin closed.
    gc.freeze()
    return app


def catalog(args: argparse.Namespace) -> int:
    from loopd.catalog import catalog_to_json, catalog_to_text, discover_catalog
    from loopd.catalog.listing import listed_models
    from loopd.cli.trust import tell_workspace
    from loopd.config import load_config

    env = dict(os.environ)
    config = load_config(env, Path.cwd())
    tell_workspace(config)
    build = discover_catalog(config, env, os.getcwd())
    listed = asyncio.run(listed_models(build.catalog, env))  # what model servers serve
    if args.json:
        print(json.dumps(catalog_to_json(build.catalog, build.skipped, listed), indent=2))
    else:
        print(escape(catalog_to_text(build.catalog, build.skipped, listed), multiline=True))
    return 0


def sessions(args: argparse.Namespace) -> int:
    from loopd.config import data_dir
    from loopd.sessions.manager import SessionHeld, SessionNotFound
    from loopd.sessions.transcript import transcript
    from loopd.store.lease import Leases
    from loopd.store.sqlite import SqliteStore

    store = SqliteStore(data_dir(os.environ) / "sessions.db")
    try:
        if args.action == "list":
            return _list_sessions(store, args.cwd, args.json)
        if args.session_id is None:
            raise ConfigError(f"`loopd sessions {args.action}` needs a session id")
        if args.action == "rewind":
            from loopd.cli.rewind import rewind

            return rewind(args)
        if args.action == "delete":
            holder = Leases(store).holder(args.session_id)
            if holder is not None:
                raise SessionHeld(args.session_id, holder)
            if not store.delete(args.session_id):
                raise SessionNotFound(f"no session {args.session_id!r}")
            return 0
        record = store.get(args.session_id)
        if record is None:
            raise SessionNotFound(f"no session {args.session_id!r}")
        events = store.events(args.session_id)
        if args.json:
            print(json.dumps({"id": record.id, "cwd": record.cwd, "events": events}, indent=2))
        else:
            title = escape(record.title or "(untitled)")
            print(f"# {title}\n\n{escape(transcript(events), multiline=True)}")
        return 0
    finally:
        store.close()


def _list_sessions(store: SqliteStore, cwd: str | None, as_json: bool) -> int:
    page = store.list_sessions(os.path.realpath(cwd) if cwd else None, limit=1000)
    rows = [
        {"id": s.id, "cwd": s.cwd, "title": s.title, "updatedAt": s.updated_at}
        for s in page.sessions
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        where = f" for {os.path.realpath(cwd)}" if cwd else ""
        print(f"No sessions stored{where}.", file=sys.stderr)
    for s in [] if as_json else page.sessions:
        print(f"{s.id}  {s.updated_at}  {escape(s.cwd)}  {escape(s.title or '')}")
    return 0


def demo(args: argparse.Namespace) -> int:
    from loopd.cli.demo import run_demo

    return run_demo()
