"""`loopd acp --remote URL`: a stdio ACP agent for any editor, relaying to `loopd
serve` over the Streamable HTTP transport.

What the editor writes is posted, one message at a time and in order; what the
server sends comes on the connection's SSE stream and one per session, and is
written to the editor as it arrives. The server's requests (approvals, `fs/*`,
`terminal/*`) reach the editor like any message, and its answers go back the same
way: the dialog is the editor's, the files and commands the server's.

When the network drops, each stream is opened again with the `Last-Event-ID` it
last saw, and the server sends what followed, once (`loopd.remote.streams`): the
turn ran on meanwhile and its rest arrives in order, never twice. A post whose
answer was lost is posted again; the server passes a repeat on once. If the server
has forgotten the connection (restarted, or away longer than its grace), what the
editor still waits for fails, and the bridge connects again and loads the sessions
it had without showing their replay (see `Bridge._lose`).

The token comes from `LOOPD_REMOTE_TOKEN` or `--token-file`, never the command line
(every process can read another's arguments); it is sent only over TLS, or to a
loopback address.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import ssl
import stat
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from loopd.protocol.errors import ConfigError
from loopd.protocol.jsonvalues import loads_bounded
from loopd.streams.lines import LineReader, Overlong

CONNECTION, SESSION = "Acp-Connection-Id", "Acp-Session-Id"
MAX_LINE = 50 * 1024 * 1024
PAUSES = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)  # between tries while the server is unreachable
QUIET = 60.0  # seconds without a byte (keepalives come every 15) before a stream is dead
_ATTACH = frozenset({"session/load", "session/resume"})


class Lost(Exception):
    """The server no longer knows this connection."""


def bridge_command(args: argparse.Namespace) -> int:
    from loopd.streams.stdio import protect_stdout

    url = args.remote
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--remote wants an http(s) URL of `loopd serve`, got {url!r}")
    secret = _token(args.token_file)
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise ConfigError("--remote over plain http is for loopback only: the token would show")
    verify: ssl.SSLContext | bool = False
    if parts.scheme == "https":
        from loopd.remote.tls import client_context

        verify = client_context(parts.hostname, parts.port or 443, args.fingerprint, args.ca)
    out = protect_stdout()
    asyncio.run(Bridge(url, secret, verify).run(out))
    return 0


def _token(path: str | None) -> str:
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
        value = os.environ.get("LOOPD_REMOTE_TOKEN", "").strip()
    if not value:
        raise ConfigError("--remote needs the token: LOOPD_REMOTE_TOKEN or --token-file FILE")
    return value


def _loopback(host: str) -> bool:
    from loopd.remote.serve import loopback

    return loopback(host)


@dataclass
class Bridge:
    url: str
    secret: str
    verify: ssl.SSLContext | bool
    connection: str | None = None
    asked: dict[Any, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    posted: set[Any] = field(default_factory=set)  # asked and taken by the connection
    streams: dict[str | None, asyncio.Task[None]] = field(default_factory=dict)
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    initialize: dict[str, Any] | None = None  # the editor's, posted again on a new connection
    opened: dict[str, dict[str, Any]] = field(default_factory=dict)  # session: how to load it
    quiet: dict[str, str] = field(default_factory=dict)  # our own loads: their replay unshown
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # not while connecting again
    recovering: asyncio.Task[None] | None = None

    async def run(self, out: Any) -> None:
        from loopd.streams.stdio import open_stdin, open_stdout

        stdin = await open_stdin(MAX_LINE)
        self._out = await open_stdout(out)
        self.ready.set()
        http2 = importlib.util.find_spec("h2") is not None
        timeout = httpx.Timeout(30.0, read=QUIET)
        headers = {"Authorization": f"Bearer {self.secret}"}
        async with httpx.AsyncClient(
            verify=self.verify, http2=http2, timeout=timeout, headers=headers
        ) as self._http:
            relay = asyncio.create_task(self._relay(LineReader(stdin.reader, MAX_LINE)))
            lost = asyncio.create_task(self.lost.wait())
            try:
                await asyncio.wait((relay, lost), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (relay, lost, self.recovering):
                    if task is not None:
                        task.cancel()
                for task in self.streams.values():
                    task.cancel()
                await asyncio.gather(*self.streams.values(), return_exceptions=True)
                await self._goodbye()
                stdin.close()

    async def _relay(self, lines: LineReader) -> None:
        """Post what the editor writes until its input ends (or the server lost us)."""
        while (line := await lines.line()) is not None:
            if isinstance(line, Overlong) or not line.strip():
                continue
            try:
                message = loads_bounded(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                await self._post(message)

    async def _post(self, message: dict[str, Any], again: bool = True) -> None:
        method, params = message.get("method"), message.get("params")
        if isinstance(method, str) and "id" in message:
            self.asked[message["id"]] = (method, params if isinstance(params, dict) else {})
        if method == "initialize":
            self.initialize = message
        else:
            await self.ready.wait()
        headers = {}
        if self.connection is not None:
            headers[CONNECTION] = self.connection
        session = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(method, str) and isinstance(session, str):
            headers[SESSION] = session
        response = await self._deliver(message, headers)
        if response is None:
            return
        if response.status_code == 202 and method in _ATTACH and isinstance(session, str):
            self.opened[session] = dict(params or {})
            self._watch(session)  # known to the server now (its replay is on the connection's)
        if response.status_code in (200, 202) and "id" in message and method is not None:
            self.posted.add(message["id"])
        if response.status_code == 200 and method == "initialize":
            self.connection = response.headers.get(CONNECTION)
            self._watch(None)
            await self._write(loads_bounded(response.content))
        elif response.status_code == 403 and "id" in message:
            await self._write(loads_bounded(response.content))  # the server's boundary said no
        elif response.status_code == 404 and self.connection is not None:
            self._lose("the server no longer knows this connection")
            if again:  # posted again on the new connection
                await self._post(message, again=False)
        elif response.status_code >= 400:
            await self._fail(
                message, f"the server refused it ({response.status_code}): {response.text[:300]}"
            )

    async def _deliver(
        self, message: dict[str, Any], headers: dict[str, str]
    ) -> httpx.Response | None:
        """Post until the server answers (a lost answer is posted again: it passes a
        repeat on once). None when the server cannot be reached at all."""
        for attempt in range(len(PAUSES) * 20):
            try:
                return await self._http.post(self.url, json=message, headers=headers)
            except httpx.TransportError as err:
                if attempt == 0:
                    _say(f"the server is unreachable ({err.__class__.__name__}); trying again")
                await asyncio.sleep(PAUSES[min(attempt, len(PAUSES) - 1)])
        await self._fail(message, "the server could not be reached")
        return None

    def _watch(self, session: str | None) -> None:
        if session not in self.streams:
            self.streams[session] = asyncio.create_task(self._follow(session))

    async def _follow(self, session: str | None) -> None:
        """One stream, written to the editor; opened again where it broke."""
        last, attempt = 0, 0
        headers = {CONNECTION: self.connection or "", "Accept": "text/event-stream"}
        if session is not None:
            headers[SESSION] = session
        while True:
            try:
                async with self._http.stream(
                    "GET", self.url, headers={**headers, "Last-Event-ID": str(last)}
                ) as response:
                    if response.status_code in (404, 410):
                        self._lose(f"the server lost the stream ({response.status_code})")
                        return
                    response.raise_for_status()
                    async for number, data in _events(response.aiter_lines()):
                        attempt = 0
                        if number is not None:
                            last = number
                        await self._seen(data)
                # It ended: the server is stopping, or the daemon ended the connection.
                # Asked again, a server that forgot the connection says so (404).
            except (httpx.TransportError, httpx.HTTPStatusError):
                await asyncio.sleep(PAUSES[min(attempt, len(PAUSES) - 1)])
                attempt += 1

    async def _seen(self, data: str) -> None:
        """A server message: watch a session it made, then write it (unless it is
        what a load of our own replays: the editor has it)."""
        with contextlib.suppress(ValueError):
            message = loads_bounded(data)
            if isinstance(message, dict) and self._ours(message):
                return
            if isinstance(message, dict) and "method" not in message:
                self.posted.discard(message.get("id"))
                method, params = self.asked.pop(message.get("id"), ("", {}))
                made = (message.get("result") or {}).get("sessionId")
                if method in ("session/new", "session/fork") and isinstance(made, str):
                    self.opened[made] = params
                    self._watch(made)
        self._out.write(data.encode() + b"\n")
        await self._out.drain()

    async def _write(self, message: Any) -> None:
        if isinstance(message, dict) and "method" not in message:
            self.asked.pop(message.get("id"), None)
        await self._seen(json.dumps(message))

    async def _fail(self, message: dict[str, Any], why: str) -> None:
        _say(why)
        if "method" in message and "id" in message:
            error = {"code": -32603, "message": f"loopd --remote: {why}"}
            await self._write({"jsonrpc": "2.0", "id": message["id"], "error": error})

    def _ours(self, message: dict[str, Any]) -> bool:
        if "method" not in message:
            key = message.get("id")
            if isinstance(key, str) and key in self.quiet:
                self._watch(self.quiet.pop(key))  # loaded: live from here on
                return True
            return False
        params = message.get("params")
        session = params.get("sessionId") if isinstance(params, dict) else None
        return message.get("method") == "session/update" and session in self.quiet.values()

    def _lose(self, why: str) -> None:
        """The server forgot the connection (it restarted, or the network was away for
        longer than its grace): what the editor still waits for fails (the turn was
        cut off with the connection), and the bridge connects again and loads the
        sessions it had, showing none of their replay: the editor has their history.
        Whatever they did after the editor last heard is in the journal, not shown."""
        for rid in [r for r in self.asked if r in self.posted]:  # the others are posted anew
            del self.asked[rid]
            error = {"code": -32603, "message": f"loopd --remote: {why}"}
            answer = {"jsonrpc": "2.0", "id": rid, "error": error}
            self._out.write(json.dumps(answer).encode() + b"\n")
        self.posted.clear()
        if self.initialize is None:
            self.lost.set()
        elif self.recovering is None:
            _say(f"{why}; connecting again")
            self.ready.clear()
            self.recovering = asyncio.create_task(self._recover())

    async def _recover(self) -> None:
        """A new connection, with the editor's own `initialize` and the sessions it had."""
        old = [task for task in self.streams.values() if task is not asyncio.current_task()]
        self.streams.clear()
        for task in old:
            task.cancel()
        assert self.initialize is not None
        hello = {**self.initialize, "id": "loopd-remote-initialize"}
        for attempt in range(len(PAUSES) * 100):
            with contextlib.suppress(httpx.TransportError):
                response = await self._http.post(self.url, json=hello)
                if response.status_code == 200:
                    break
            await asyncio.sleep(PAUSES[min(attempt, len(PAUSES) - 1)])
        else:
            _say("the server did not come back")
            self.lost.set()
            return
        self.connection = response.headers.get(CONNECTION)
        self._watch(None)
        for number, (session, params) in enumerate(list(self.opened.items())):
            rid = f"loopd-remote-load-{number}"
            self.quiet[rid] = session
            params = {**params, "sessionId": session}
            load = {"jsonrpc": "2.0", "id": rid, "method": "session/load", "params": params}
            with contextlib.suppress(httpx.TransportError):
                await self._http.post(self.url, json=load, headers=self._on_connection())
        self.recovering = None
        self.ready.set()
        _say("connected again")

    def _on_connection(self) -> dict[str, str]:
        return {CONNECTION: self.connection or ""}

    async def _goodbye(self) -> None:
        if self.connection is None or self.lost.is_set():
            return
        with contextlib.suppress(httpx.HTTPError):
            await self._http.delete(self.url, headers={CONNECTION: self.connection}, timeout=5)


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[int | None, str]]:
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


def _say(text: str) -> None:
    sys.stderr.write(f"loopd --remote: {text}\n")
    sys.stderr.flush()
