"""`loopd lsp --remote URL`: a stdio LSP server for any editor, relaying to `loopd
serve`'s `/lsp` endpoint, where the daemon serves the connection as it serves a
local `loopd lsp` (`loopd.remote.asgi`).

The whole LSP frontend runs on the server, in the daemon: its sessions, the
`loopd/*` extension, the commands, the boundary. The bridge only carries frames:
what the editor writes is posted, one message at a time, in order and numbered;
what the server sends (`loopd/session/update`, its requests: approvals,
`workspace/applyEdit`, dialogs) comes on the connection's SSE stream and is written
to the editor as it arrives, and the editor's answers go back as any message does.
The dialog is the editor's; the files, commands and credentials are the server's.

A dropped network is the transport's to mend (`loopd.remote.link`): the stream is
opened again where it broke and a post whose answer was lost is posted again, so
the turn that ran on meanwhile arrives once, in order, and no `didChange` applies
twice. A server that forgot the connection (restarted, or away longer than its
grace) cannot be resumed under the editor: LSP's state (open documents, the
client's capabilities) was the connection's. Then what the editor waits for fails,
it is told so, and the bridge exits with status 1: VS Code's client starts it again
by itself (and the extension loads its session), the Neovim plugin with the next
file opened; a new connection is a new LSP session.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from loopd.protocol.jsonvalues import loads_bounded
from loopd.remote.link import (
    CONNECTION,
    Poster,
    Target,
    answer_in,
    follow,
    goodbye,
    http_client,
    say,
)
from loopd.streams.frames import MARKER, MAX_HEADER_LINE, BadFrame, FrameReader, frame
from loopd.streams.lines import LineReader
from loopd.tasks import first_to_end

ENDPOINT = "/lsp"
INTERNAL_ERROR = -32603
MESSAGE_ERROR = 1  # `window/showMessage`'s type Error


def lsp_bridge_command(args: argparse.Namespace) -> int:
    from loopd.remote.link import target
    from loopd.streams.stdio import protect_stdout

    server = target(args, ENDPOINT)
    out = protect_stdout()
    return asyncio.run(LspBridge(server).run(out))


@dataclass
class LspBridge:
    server: Target
    pending: set[Any] = field(default_factory=set)  # the editor's requests not yet answered
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    exited: bool = False  # the editor said `exit`: the stream's end is expected
    stream: asyncio.Task[None] | None = None

    async def run(self, out: Any) -> int:
        """Relay until the editor's input ends (0) or the server lost the connection (1)."""
        from loopd.streams.stdio import open_stdin, open_stdout

        stdin = await open_stdin(1 << 20)
        self._out = await open_stdout(out)
        lines = LineReader(stdin.reader, MAX_HEADER_LINE, resync=MARKER)
        async with http_client(self.server) as self._http:
            self._poster = Poster(self._http, self.server.url)
            try:
                await first_to_end(self._relay(FrameReader(lines)), self.lost.wait())
            finally:
                if self.stream is not None:
                    self.stream.cancel()
                with contextlib.suppress(ConnectionError):
                    await self._out.drain()  # what `_lose` wrote
                if not self.lost.is_set():
                    await goodbye(self._http, self.server.url, self._poster.connection)
                stdin.close()
        return 1 if self.lost.is_set() and not self.exited else 0

    async def _relay(self, frames: FrameReader) -> None:
        while (body := await frames.next()) is not None:
            if isinstance(body, BadFrame):
                say(f"skipped a frame from the editor: {body.reason}")
                continue
            with contextlib.suppress(ValueError):
                message = loads_bounded(body)
                if isinstance(message, dict):
                    await self._post(message)
                if self.exited:
                    return  # LSP's `exit`: the server's end follows, or there was none

    async def _post(self, message: dict[str, Any]) -> None:
        """Post one message; answer it here when the server would not take it."""
        first = self._poster.connection is None
        method, request = message.get("method"), "method" in message and "id" in message
        self.exited = self.exited or method == "exit"
        if first and method != "initialize":
            await self._fail(message, "the first message must be `initialize`")
            return
        if request and not first:
            self.pending.add(message["id"])  # before the post: the answer may come first
        response = await self._poster.post(message)
        if response is None or response.status_code != 202:
            self.pending.discard(message.get("id"))
        if response is None:
            await self._fail(message, "the server could not be reached")
        elif response.status_code == 200 and first:
            self._poster.connected(response.headers.get(CONNECTION))
            self.stream = asyncio.create_task(self._follow())
            await self._write(response.content)
        elif answer_in(response, message):
            await self._write(response.content)  # the server's boundary said no
        elif response.status_code == 404 and not first:
            self._lose("the server no longer knows this connection")
        elif response.status_code not in (200, 202):
            reason = f"the server refused it ({response.status_code}): {response.text[:300]}"
            await self._fail(message, reason)

    async def _follow(self) -> None:
        headers = {CONNECTION: self._poster.connection or ""}
        status = await follow(self._http, self.server.url, headers, self._seen)
        self._lose(f"the server lost the connection ({status})")

    async def _seen(self, data: str) -> None:
        with contextlib.suppress(ValueError):
            message = loads_bounded(data)
            if isinstance(message, dict) and "method" not in message:
                self.pending.discard(message.get("id"))
        await self._write(data.encode())

    async def _write(self, body: bytes) -> None:
        self._out.write(frame(body))
        await self._out.drain()

    async def _fail(self, message: dict[str, Any], why: str) -> None:
        say(why)
        if "method" in message and "id" in message:
            await self._write(_error(message["id"], why))

    def _lose(self, why: str) -> None:
        """The connection is gone on the server: every request the editor still waits
        for fails, the person is told, and the bridge ends (see the module docstring)."""
        if self.exited:
            self.lost.set()  # the editor ended it
            return
        for rid in sorted(self.pending, key=str):
            self._out.write(frame(_error(rid, why)))
        self.pending.clear()
        text = f"loopd --remote: {why}; restart the language server to connect again"
        notice = {"type": MESSAGE_ERROR, "message": text}
        note = {"jsonrpc": "2.0", "method": "window/showMessage", "params": notice}
        self._out.write(frame(json.dumps(note).encode()))
        say(f"{why}; exiting")
        self.lost.set()


def _error(rid: Any, why: str) -> bytes:
    error = {"code": INTERNAL_ERROR, "message": f"loopd --remote: {why}"}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode()
