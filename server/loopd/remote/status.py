"""What a running `loopd serve` serves and to whom, for `loopd doctor`: a file of
this user's alone (`<data dir>/remote/serving.json`, 0600), rewritten on every
connection's start and end and removed on exit. It holds no token."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loopd.home import data_path
from loopd.remote.token import remote_folder

if TYPE_CHECKING:
    from loopd.remote.connections import Connections


def status_path(env: Mapping[str, str]) -> str:
    return os.path.join(remote_folder(env), "serving.json")


def write(
    path: str, url: str, fingerprint: str | None, roots: Sequence[str], live: Connections
) -> None:
    clients = [
        {"connection": r.id[:8], "peer": r.client.peer, "transport": r.client.transport,
         "speaks": r.client.speaks, "since": r.client.since, "sessions": sorted(r.routes.sessions)}
        for r in live.live.values()
    ]  # fmt: skip
    serving = {"pid": os.getpid(), "url": url, "fingerprint": fingerprint, "roots": list(roots)}
    temporary = f"{path}.{os.getpid()}.new"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump({**serving, "clients": clients}, file)
    os.replace(temporary, path)


def read(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The running server's status, or None when none runs (a stale file is ignored)."""
    path = os.path.join(data_path(env), "remote", "serving.json")  # made by a server only
    try:
        with open(path, encoding="utf-8") as file:
            found = json.load(file)
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or not isinstance(found.get("pid"), int):
        return None
    try:
        os.kill(found["pid"], 0)
    except OSError:
        return None
    return found


def remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def describe(env: Mapping[str, str]) -> str:
    """`loopd doctor`'s lines: where `loopd serve` listens, with which certificate,
    which roots, and who is connected (peer, transport, protocol, sessions)."""
    found = read(env)
    if found is None:
        return "remote: not served (`loopd serve --listen HOST:PORT`)"
    lines = [f"remote: {found.get('url')} (pid {found['pid']})"]
    if found.get("fingerprint"):
        lines.append(f"  fingerprint: {found['fingerprint']}")
    lines.append(f"  roots: {', '.join(str(r) for r in found.get('roots') or [])}")
    clients = found.get("clients") or []
    lines.append(f"  clients: {len(clients)}")
    for client in clients:
        sessions = ", ".join(client.get("sessions") or []) or "no session yet"
        peer, transport = client.get("peer"), client.get("transport")
        lines.append(f"    {peer} over {transport} ({client.get('speaks')}): {sessions}")
    return "\n".join(lines)
