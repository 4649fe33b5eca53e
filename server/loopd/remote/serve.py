"""`loopd serve --listen HOST:PORT`: the daemon's sessions over ACP's Streamable HTTP &
WebSocket transport, on hypercorn (HTTP/1.1, HTTP/2 and WebSocket); `loopd serve
token`: a new bearer token.

Refused before anything listens: the `serve` extra not installed (hypercorn and
cryptography come only with it: the message gives the install line); no token yet;
`--no-tls` on anything but loopback
(other machines would see the token and every message); a root that is not a
folder. With no certificate named, a self-signed one is made on the first start and
kept; its fingerprint is printed for the client to pin. stderr says where it listens
(`loopd serve: listening on URL`) and never the token.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import ipaddress
import logging
import os
import signal
import socket
import ssl
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loopd.protocol.errors import ConfigError
from loopd.remote import status, tls, token
from loopd.remote.roots import canonical_roots

log = logging.getLogger(__name__)

DEFAULT_GRACE = 300.0  # seconds a connection waits for its client to come back


def serve_command(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if args.action == "token":
        fresh = token.rotate(env)
        sys.stdout.write(fresh + "\n")  # the one place it is shown: for the client
        sys.stderr.write("loopd: a new token; the old one no longer works\n")
        return 0
    if args.listen is None:
        raise ConfigError("`loopd serve` needs --listen HOST:PORT")
    _extra_installed()
    host, port = listen_address(args.listen)
    if args.no_tls and not loopback(host):
        raise ConfigError(
            f"--listen {args.listen}: anything but loopback needs TLS and a token"
            " (drop --no-tls; a self-signed certificate is made for you)"
        )
    token.stored(env)  # refused now when there is none; read again for every request
    roots = _roots(args.root or [os.getcwd()])
    cert = None if args.no_tls else _certificate(args, env)
    listener = _bind(host, port)
    scheme = "http" if cert is None else "https"
    shown = f"[{host}]" if ":" in host else host
    url = f"{scheme}://{shown}:{listener.getsockname()[1]}/acp"
    _announce(url, cert, roots)
    logging.getLogger("loopd.remote").setLevel(logging.INFO)  # who connects, and leaves
    grace = float(env.get("LOOPD_SERVE_GRACE") or DEFAULT_GRACE)
    asyncio.run(_serve(env, listener, cert, roots, url, grace))
    return 0


SERVE_EXTRA = ("hypercorn", "cryptography")
"""What the `serve` extra brings (pyproject.toml): `loopd-agent` alone has neither."""


def _extra_installed() -> None:
    """`ConfigError` with the install line when a module of the `serve` extra is
    missing: a plain `uv tool install loopd-agent` has none of them, and a traceback
    naming `cryptography` does not say that the fix is the extra."""
    missing = [name for name in SERVE_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"`loopd serve` needs the serve extra (missing: {', '.join(missing)}): "
            "uv tool install 'loopd-agent[serve]' (or pipx install 'loopd-agent[serve]')"
        )


def listen_address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--listen wants HOST:PORT, got {value!r}")
    return host, int(port)


def loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one."""
    try:
        found = {str(info[4][0]).split("%")[0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(a).is_loopback for a in found)


def _roots(paths: Sequence[str]) -> tuple[str, ...]:
    for path in paths:
        if not os.path.isdir(path):
            raise ConfigError(f"--root {path!r}: not a folder")
    return canonical_roots(paths)


def _certificate(args: argparse.Namespace, env: Mapping[str, str]) -> tls.Certificate:
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ConfigError("--tls-cert and --tls-key go together")
    if args.tls_cert is not None:
        return tls.named(args.tls_cert, args.tls_key)
    return tls.self_signed(token.remote_folder(env))


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=128)
    except OSError as err:
        raise ConfigError(f"cannot listen on {host}:{port}: {err}") from None


def _announce(url: str, cert: tls.Certificate | None, roots: Sequence[str]) -> None:
    lines = [f"loopd serve: listening on {url}"]
    if cert is not None:
        made = " (made now)" if cert.made else ""
        lines.append(f"loopd serve: certificate {cert.cert}{made}")
        lines.append(f"loopd serve: fingerprint {cert.fingerprint}")
    lines.append(f"loopd serve: roots {', '.join(roots)}")
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()


async def _serve(
    env: Mapping[str, str],
    listener: socket.socket,
    cert: tls.Certificate | None,
    roots: Sequence[str],
    url: str,
    grace: float,
) -> None:
    from hypercorn.asyncio import serve

    from loopd.remote.asgi import Endpoint
    from loopd.remote.connections import Connections

    connections = Connections(env, tuple(roots), grace)
    where = status.status_path(env)
    fingerprint = cert.fingerprint if cert else None
    connections.changed = lambda: status.write(where, url, fingerprint, roots, connections)
    connections.changed()
    config = _config(listener, cert)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_quiet_tls_close)
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    reaping = asyncio.create_task(connections.reap())

    async def stopping() -> None:
        """On SIGTERM or SIGINT: end every connection first (their streams end, and
        the daemon cancels what they ran), then let hypercorn stop."""
        await stop.wait()
        await connections.aclose()

    app = Endpoint(connections, env, roots, stored_folders(env))
    try:
        await serve(app, config, shutdown_trigger=stopping)  # type: ignore[arg-type]
    except* (RuntimeError, OSError) as err:
        # hypercorn's HTTP/2 shutdown can trip over a stream that is closing (its task
        # group refuses the idle timer's restart): only then, and only when stopping.
        if not stop.is_set():
            raise
        log.debug("hypercorn stopped untidily: %r", err)
    finally:
        reaping.cancel()
        await connections.aclose()
        status.remove(where)


def _config(listener: socket.socket, cert: tls.Certificate | None) -> Any:
    """hypercorn's configuration: on the socket bound already, with no access log."""
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"fd://{listener.fileno()}"]
    config.accesslog = None  # a request's headers hold the token: never logged
    config.errorlog = logging.getLogger("hypercorn")
    config.keep_alive_timeout = 75.0
    config.websocket_max_message_size = 50 * 1024 * 1024
    if cert is not None:
        config.certfile, config.keyfile = cert.cert, cert.key
    return config


def _quiet_tls_close(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """hypercorn lets a TLS client's untidy close escape (an `SSLError` or a reset from
    closing a connection whose peer already left, alone or in a task group's
    exception group): nothing went wrong for anyone, so it is not logged as an
    error. Anything else is, as asyncio would."""
    if _client_left(context.get("exception")):
        log.debug("a TLS client closed untidily: %s", context["exception"])
        return
    loop.default_exception_handler(context)


def _client_left(err: BaseException | None) -> bool:
    if isinstance(err, BaseExceptionGroup):
        return all(_client_left(e) for e in err.exceptions)
    # A connection's task cancelled as the server stops is asked for its exception
    # by asyncio's stream callback, which then reports the CancelledError: no error.
    return isinstance(err, ssl.SSLError | ConnectionError | asyncio.CancelledError)


def stored_folders(env: Mapping[str, str]) -> Callable[[str], tuple[str, ...] | None]:
    """A stored session's cwd and additional folders, read from the data dir's
    store (None for a session not stored)."""
    from pathlib import Path

    from loopd.home import data_path
    from loopd.store.sqlite import SqliteStore

    database = Path(data_path(env)) / "sessions.db"

    def folders(session_id: str) -> tuple[str, ...] | None:
        if not database.exists():
            return None
        store = SqliteStore(database)
        try:
            record = store.get(session_id)
        finally:
            store.close()
        return None if record is None else (record.cwd, *record.additional_dirs)

    return folders
