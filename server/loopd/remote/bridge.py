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

The transport's plumbing (the token, numbered posts, resumed streams) is
`loopd.remote.link`'s, shared with `loopd lsp --remote`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from loopd.protocol.jsonvalues import loads_bounded
from loopd.remote.link import (
    CONNECTION,
    SESSION,
    Poster,
    Target,
    answer_in,
    follow,
    goodbye,
    http_client,
    pause,
    say,
)
from loopd.streams.lines import LineReader, Overlong
from loopd.tasks import first_to_end

MAX_LINE = 50 * 1024 * 1024
_ATTACH = frozenset({"session/load", "session/resume"})


def bridge_command(args: argparse.Namespace) -> int:
    from loopd.remote.link import target
    from loopd.streams.stdio import protect_stdout

    server = target(args)
    out = protect_stdout()
    asyncio.run(Bridge(server).run(out))
    return 0


@dataclass
class Bridge:
    server: Target
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
        async with http_client(self.server) as self._http:
            self._poster = Poster(self._http, self.server.url)
            try:
                await first_to_end(
                    self._relay(LineReader(stdin.reader, MAX_LINE)), self.lost.wait()
                )
            finally:
                if self.recovering is not None:
                    self.recovering.cancel()
                for task in self.streams.values():
                    task.cancel()
                await asyncio.gather(*self.streams.values(), return_exceptions=True)
                if not self.lost.is_set():
                    await goodbye(self._http, self.server.url, self._poster.connection)
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
            self._poster.connected(response.headers.get(CONNECTION))
            self._watch(None)
            await self._write(loads_bounded(response.content))
        elif answer_in(response, message):
            await self._write(loads_bounded(response.content))  # the server's boundary said no
        elif response.status_code == 404 and self._poster.connection is not None:
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
        """Post until the server answers; None (the editor told) when it cannot be
        reached at all."""
        response = await self._poster.post(message, headers)
        if response is None:
            await self._fail(message, "the server could not be reached")
        return response

    def _watch(self, session: str | None) -> None:
        if session not in self.streams:
            self.streams[session] = asyncio.create_task(self._follow(session))

    async def _follow(self, session: str | None) -> None:
        """One stream, written to the editor; opened again where it broke."""
        headers = {CONNECTION: self._poster.connection or ""}
        if session is not None:
            headers[SESSION] = session
        status = await follow(self._http, self.server.url, headers, self._seen)
        self._lose(f"the server lost the stream ({status})")

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
        say(why)
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
            say(f"{why}; connecting again")
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
        for attempt in range(100):  # the server is back, its daemon may still be starting
            response = await self._poster.post(hello, fresh=True)
            if response is None or response.status_code == 200:
                break
            await pause(attempt)
        if response is None or response.status_code != 200:
            say("the server did not come back")
            self.lost.set()
            return
        self._poster.connected(response.headers.get(CONNECTION))
        self._watch(None)
        for number, (session, params) in enumerate(list(self.opened.items())):
            rid = f"loopd-remote-load-{number}"
            self.quiet[rid] = session
            params = {**params, "sessionId": session}
            load = {"jsonrpc": "2.0", "id": rid, "method": "session/load", "params": params}
            await self._poster.post(load)
        self.recovering = None
        self.ready.set()
        say("connected again")
