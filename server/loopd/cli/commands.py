"""The CLI subcommands, each a thin client of the app built in `loopd.app`."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopd.protocol.errors import ConfigError

if TYPE_CHECKING:
    from loopd.app import App
    from loopd.config import Config
    from loopd.sessions.manager import SessionManager


def run(args: argparse.Namespace) -> int:
    text = args.prompt if args.prompt is not None else sys.stdin.read()
    if not text.strip():
        raise ConfigError("no prompt: pass one as an argument or on stdin")
    from loopd.cli.terminal import TerminalLink, tty_prompter
    from loopd.cli.turn import EXIT_CODES, run_turn

    link = TerminalLink(
        sys.stdout,
        sys.stderr,
        as_json=args.json,
        assume_yes=args.yes,
        prompter=None if args.yes else tty_prompter(),
    )
    config = {k: v for k, v in (("mode", args.mode), ("model", args.model)) if v}
    cwd = os.path.realpath(args.cwd)
    outcome = asyncio.run(run_turn(dict(os.environ), cwd, text, link, args.runtime, config))
    if args.json:
        print(json.dumps({"stopReason": outcome.stop_reason, "turnId": outcome.turn_id}))
    return EXIT_CODES.get(outcome.stop_reason, 1)


def acp() -> int:
    """`initialize` is answered while the app is still being built (in a thread:
    catalog discovery runs each CLI's `--version`, the store opens); the first
    request that needs sessions waits for it."""
    from loopd.acp.server import serve_stdio
    from loopd.stdio import protect_stdout

    out = protect_stdout()  # before anything else can print: stdout is the protocol's

    async def main() -> None:
        from loopd.app import build_app

        build = functools.partial(build_app, dict(os.environ), os.getcwd(), editor=True)
        building = asyncio.create_task(asyncio.to_thread(build))
        manager = asyncio.ensure_future(_manager_of(building))
        try:
            await serve_stdio(manager, out)
        finally:
            try:
                app = await building
            except Exception:
                pass  # every request already answered with the reason
            else:
                await app.aclose()

    asyncio.run(main())
    return 0


async def _manager_of(building: Awaitable[App]) -> SessionManager:
    return (await building).manager


def lsp(tcp: str | None) -> int:
    from loopd.app import build_app
    from loopd.lsp.server import serve

    address = None
    if tcp is not None:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"--tcp wants HOST:PORT, got {tcp!r}")
        address = (host, int(port))
    from loopd.stdio import protect_stdout

    out = protect_stdout() if address is None else None  # stdout is the protocol's

    async def main() -> None:
        app = build_app(dict(os.environ), os.getcwd(), editor=True)
        try:
            await serve(app.manager, address, out)
        finally:
            await app.aclose()

    asyncio.run(main())
    return 0


def catalog(as_json: bool) -> int:
    from loopd.catalog import catalog_to_json, catalog_to_text, discover_catalog

    env = dict(os.environ)
    build = discover_catalog(_config(env), env)
    if as_json:
        print(json.dumps(catalog_to_json(build.catalog, build.skipped), indent=2))
    else:
        print(catalog_to_text(build.catalog, build.skipped))
    return 0


def sessions(action: str, session_id: str | None, cwd: str | None, as_json: bool) -> int:
    from loopd.config import data_dir
    from loopd.store.sqlite import SqliteStore

    store = SqliteStore(data_dir(os.environ) / "sessions.db")
    try:
        if action == "list":
            page = store.list_sessions(os.path.realpath(cwd) if cwd else None, limit=1000)
            rows = [
                {"id": s.id, "cwd": s.cwd, "title": s.title, "updatedAt": s.updated_at}
                for s in page.sessions
            ]
            if as_json:
                print(json.dumps(rows, indent=2))
            for row in [] if as_json else rows:
                print(f"{row['id']}  {row['updatedAt']}  {row['cwd']}  {row['title'] or ''}")
            return 0
        if session_id is None:
            raise ConfigError(f"`loopd sessions {action}` needs a session id")
        if action == "delete":
            if not store.delete(session_id):
                raise ConfigError(f"no session {session_id!r}")
            return 0
        record = store.get(session_id)
        if record is None:
            raise ConfigError(f"no session {session_id!r}")
        events = store.events(session_id)
        if as_json:
            print(json.dumps({"id": record.id, "cwd": record.cwd, "events": events}, indent=2))
        else:
            print(_transcript(record.title, events))
        return 0
    finally:
        store.close()


def _transcript(title: str | None, events: list[dict[str, Any]]) -> str:
    lines = [f"# {title or '(untitled)'}"]
    last = ""
    for event in events:
        kind = event.get("sessionUpdate")
        if kind in ("user_message_chunk", "agent_message_chunk"):
            who = "You" if kind == "user_message_chunk" else "loopd"
            if kind != last:
                lines.append(f"\n## {who}\n")
            lines[-1] += event["content"].get("text", "")
        elif kind == "tool_call":
            lines.append(f"→ {event.get('title', '')}")
        last = kind or ""
    return "\n".join(lines)


def doctor() -> int:
    from loopd import __version__
    from loopd.catalog import catalog_to_text, discover_catalog
    from loopd.config import data_dir
    from loopd.sandbox.probe import probe_sandbox

    env = dict(os.environ)
    print(f"loopd {__version__} (Python {sys.version.split()[0]})")
    print(f"data: {data_dir(env)}")
    config = _config(env)
    if config.workspace is not None:
        print(f"workspace config: {config.workspace.file} ({config.workspace.state})")
    build = discover_catalog(config, env)
    print(catalog_to_text(build.catalog, build.skipped))
    print(probe_sandbox(env=env).report())
    return 0


def trust(folder: str) -> int:
    """Trust a folder's workspace file as it is now, and say what that lets apply."""
    from loopd.config import (
        TrustStore,
        WorkspaceFile,
        data_dir,
        load_config,
        workspace_config_file,
    )

    env = dict(os.environ)
    where = Path(os.path.realpath(folder))
    file = workspace_config_file(where)
    found = WorkspaceFile.read(where, file)
    if found is None:
        print(f"loopd: {file} does not exist: there is nothing to trust", file=sys.stderr)
        return 1
    before = load_config(env, where).workspace
    TrustStore(data_dir(env)).trust(found)
    print(f"Trusted {where}: {file} (sha256 {found.sha256[:12]}) applies as it is now.")
    if before is not None and before.ignored:
        print(f"Settings that now apply: {', '.join(before.ignored)}.")
    print("If the file changes, loopd ignores it again until you trust it again.")
    return 0


def untrust(folder: str) -> int:
    from loopd.config import TrustStore, data_dir

    where = Path(os.path.realpath(folder))
    if TrustStore(data_dir(os.environ)).untrust(where):
        print(f"Withdrew trust from {where}: its .loopd/config.toml only tightens from now on.")
    else:
        print(f"{where} was not trusted.")
    return 0


def _config(env: dict[str, str]) -> Config:
    """The config for here; what an untrusted workspace file could not set is said
    on stderr."""
    from loopd.cli.turn import tell_workspace
    from loopd.config import load_config

    config = load_config(env, Path.cwd())
    tell_workspace(config)
    return config


def demo() -> int:
    from loopd.cli.demo import run_demo

    return run_demo()
