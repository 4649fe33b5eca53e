"""The laptop's end of the Streamable HTTP transport, shared by `loopd acp --remote`
(`loopd.remote.bridge`) and `loopd lsp --remote` (`loopd.remote.lsp_bridge`).

- `target`: the URL, the token and how the server is verified, from the command's
  arguments. The token comes from `LOOPD_REMOTE_TOKEN` or `--token-file`, never the
  command line (every process can read another's arguments); it is sent only over
  TLS, or to a loopback address.
- `Poster`: posts one message at a time, numbered (`Loopd-Message`), until the server
  answers; a post whose answer was lost is posted again with its number, and the
  server passes a number on once.
- `follow`: one SSE stream, opened again with the `Last-Event-ID` it last saw after
  a drop, so that what the server sent meanwhile arrives once, in order.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import ssl
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from loopd.protocol.errors import ConfigError
from loopd.protocol.jsonvalues import loads_bounded

CONNECTION, SESSION, NUMBER = "Acp-Connection-Id", "Acp-Session-Id", "Loopd-Message"
PAUSES = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)  # between tries while the server is unreachable
QUIET = 60.0  # seconds without a byte (keepalives come every 15) before a stream is dead
TRIES = len(PAUSES) * 20  # some four minutes of an unreachable server, then a post fails


@dataclass(frozen=True, slots=True)
class Target:
    url: str
    secret: str
    verify: ssl.SSLContext | bool


def target(args: argparse.Namespace, path: str | None = None) -> Target:
    """The server `--remote` names (its endpoint moved to `path` when given: `loopd lsp
    --remote` takes the URL `loopd serve` printed, of `/acp`, or the bare server)."""
    url = args.remote
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--remote wants an http(s) URL of `loopd serve`, got {url!r}")
    if path is not None and parts.path in ("", "/", "/acp", path):
        url = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    secret = token(args.token_file, os.environ)
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise ConfigError("--remote over plain http is for loopback only: the token would show")
    verify: ssl.SSLContext | bool = False
    if parts.scheme == "https":
        from loopd.remote.tls import client_context

        verify = client_context(parts.hostname, parts.port or 443, args.fingerprint, args.ca)
    return Target(url, secret, verify)


def token(path: str | None, env: Mapping[str, str]) -> str:
    """The bearer token: the file's (a regular file, read without following a FIFO's
    block) or `LOOPD_REMOTE_TOKEN`'s."""
    if path is not None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as file:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise ConfigError(f"--token-file {path}: not a regular file")
                value = file.read(4096).decode("utf-8", "replace").strip()
        except OSError as err:
            raise ConfigError(f"--token-file {path}: {err}") from None
    else:
        value = env.get("LOOPD_REMOTE_TOKEN", "").strip()
    if not value:
        raise ConfigError("--remote needs the token: LOOPD_REMOTE_TOKEN or --token-file FILE")
    return value


def _loopback(host: str) -> bool:
    from loopd.remote.serve import loopback

    return loopback(host)


def http_client(server: Target) -> httpx.AsyncClient:
    """The client every request goes through: HTTP/2 when `h2` is there, the token on
    every request, a read timeout that declares a silent stream dead."""
    return httpx.AsyncClient(
        verify=server.verify,
        http2=importlib.util.find_spec("h2") is not None,
        timeout=httpx.Timeout(30.0, read=QUIET),
        headers={"Authorization": f"Bearer {server.secret}"},
    )


class Poster:
    """Posts to one connection, each message with the next number."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http, self.url = http, url
        self.connection: str | None = None
        self._number = 0

    def connected(self, connection: str | None) -> None:
        """A new connection: its numbers start again."""
        self.connection, self._number = connection, 0

    async def post(
        self, message: dict[str, Any], headers: Mapping[str, str] | None = None, fresh: bool = False
    ) -> httpx.Response | None:
        """Post until the server answers; None when it cannot be reached at all.
        `fresh`: on no connection (an `initialize` that makes a new one)."""
        fields = dict(headers or {})
        if self.connection is not None and not fresh:
            self._number += 1
            fields |= {CONNECTION: self.connection, NUMBER: str(self._number)}
        for attempt in range(TRIES):
            try:
                return await self.http.post(self.url, json=message, headers=fields)
            except httpx.TransportError as err:
                if attempt == 0:
                    say(f"the server is unreachable ({err.__class__.__name__}); trying again")
                await pause(attempt)
        return None


def answer_in(response: httpx.Response, message: Mapping[str, Any]) -> bool:
    """Whether a refusal's body is a JSON-RPC answer to `message` (the server's
    boundary, or params it could not route): the editor is shown it as it is."""
    if response.status_code not in (400, 403) or "id" not in message or "method" not in message:
        return False
    try:
        body = loads_bounded(response.content)
    except ValueError:
        return False
    return isinstance(body, dict) and "error" in body and body.get("id") == message["id"]


async def follow(
    http: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    seen: Callable[[str], Awaitable[None]],
) -> int:
    """Pass each message of one stream to `seen`, opening it again where it broke,
    until the server says it no longer has it: that status (404 or 410) is returned.
    A stream that ends (the server stopping) is asked for again: a server that forgot
    the connection says so."""
    last, attempt = 0, 0
    fields = {**headers, "Accept": "text/event-stream"}
    while True:
        try:
            resume = {**fields, "Last-Event-ID": str(last)}
            async with http.stream("GET", url, headers=resume) as response:
                if response.status_code in (404, 410):
                    return response.status_code
                response.raise_for_status()
                async for number, data in events(response.aiter_lines()):
                    attempt = 0
                    if number is not None:
                        last = number
                    await seen(data)
        except (httpx.TransportError, httpx.HTTPStatusError):
            await pause(attempt)
            attempt += 1


async def events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[int | None, str]]:
    """(id, data) of each SSE event (comments skipped)."""
    number: int | None = None
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield number, "\n".join(data)
            number, data = None, []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("id:"):
            value = line[3:].strip()
            number = int(value) if value.isdigit() else None


async def goodbye(http: httpx.AsyncClient, url: str, connection: str | None) -> None:
    """End the connection on the server (its daemon connection, at once, rather than
    after the grace a dropped client gets)."""
    if connection is None:
        return
    with contextlib.suppress(httpx.HTTPError):
        await http.delete(url, headers={CONNECTION: connection}, timeout=5)


async def pause(attempt: int) -> None:
    await asyncio.sleep(PAUSES[min(attempt, len(PAUSES) - 1)])


def say(text: str) -> None:
    sys.stderr.write(f"loopd --remote: {text}\n")
    sys.stderr.flush()
