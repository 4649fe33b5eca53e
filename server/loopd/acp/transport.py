"""ACP's newline-delimited JSON, with every line bounded.

The SDK's own NDJSON reader gathers a line whatever its size: a 100 MB line
without a newline is held whole (and a client that never sends one grows it without
end). `BoundedNdjson` writes as the SDK does and reads through
`loopd.streams.lines.LineReader`: a line
over `max_line` bytes is dropped as it streams in and answered with an Invalid
Request error (with the request's id when its first bytes name one, so the client's
call fails instead of waiting forever), and reading goes on with the next line. A
line that is not JSON is answered with a parse error (id null), as JSON-RPC says;
the SDK only logged it; so is one nested deeper than `loads_bounded` allows (the
decoder's recursion used to kill the process). `at_end`, when given, is awaited when
the stream ends, before the SDK hears of it and closes the connection. `pending`
bytes, read off the stream by someone else first, are read before the stream.

Writing is the SDK's (the same bytes, in the order sent) but batched: notifications
sent within one turn of the event loop go to the stream in one write, at the latest
when `BATCH` bytes are waiting; a request or an answer goes at once, with what waits
before it (an answer is on the wire when its send returns, as the SDK's observers
expect). The SDK's writer made one write, and two loop turns, per message: a
10,000-message replay spent most of its time there.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from loopd.protocol.jsonvalues import loads_bounded
from loopd.streams.lines import LineReader, Overlong

log = logging.getLogger(__name__)

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
BATCH = 1 << 16  # bytes held before they go to the stream without waiting for the loop
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,256}")')


class BoundedNdjson:
    """An `acp` `Transport` over a byte reader and writer (see the module docstring)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_line: int,
        *,
        pace: Callable[[], Awaitable[None]] | None = None,
        at_end: Callable[[], Awaitable[None]] | None = None,
        pending: bytes = b"",
    ) -> None:
        self._lines = LineReader(reader, max_line)
        self._lines.unread(pending)  # read off the stream before it came here
        self._out = Batched(writer)
        self._pace = pace
        self._at_end = at_end

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        await self._out.send(data, at_once="id" in message)

    async def receive(self) -> dict[str, Any] | None:
        """The next message; `pace`, when given, is awaited before each line is read
        (a file of requests waits for the answers to what it asked so far)."""
        while True:
            if self._pace is not None:
                await self._pace()
            line = await self._lines.line()
            if line is None:
                if self._at_end is not None:
                    await self._at_end()
                return None
            if isinstance(line, Overlong):
                limit = self._lines.max_line
                detail = f"a message of {line.size} bytes or more (the limit is {limit})"
                await self._error(
                    _id_in(line.prefix), INVALID_REQUEST, f"Invalid Request: {detail}"
                )
                continue
            if not line.strip():
                continue
            try:
                message = loads_bounded(line)
            except ValueError as err:
                await self._error(None, PARSE_ERROR, f"Parse error: {err}")
                continue
            if not isinstance(message, dict):
                await self._error(None, INVALID_REQUEST, "Invalid Request: not a JSON object")
                continue
            return message

    async def close(self) -> None:
        """Stop writing (what was sent is handed to the stream first); the streams
        belong to whoever opened them."""
        self._out.close()

    async def _error(self, msg_id: int | str | None, code: int, message: str) -> None:
        log.warning("answering a bad message with %d: %s", code, message)
        error = {"code": code, "message": message}
        await self.send({"jsonrpc": "2.0", "id": msg_id, "error": error})


def _id_in(prefix: bytes) -> int | str | None:
    """The id a dropped request's first bytes give, when it comes before its params
    (as every client writes it); None otherwise."""
    params = prefix.find(b'"params"')
    match = _ID.search(prefix, 0, params if params >= 0 else len(prefix))
    if match is None:
        return None
    value: int | str = json.loads(match.group(1))
    return value


class Batched:
    """An ordered writer that batches: `send` adds a message's bytes to what is
    waiting, handed to the stream at the end of this turn of the loop, or `at_once`
    (or past `BATCH` bytes, then letting other tasks run). It waits, as the stream's own
    `drain` does, only while the stream is over its high-water mark, and raises when
    the reader is gone. Nothing is sent after `close`."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._waiting: list[bytes] = []
        self._size = 0
        self._flush: asyncio.Handle | None = None
        self._closed = False
        self._failed: OSError | None = None

    async def send(self, data: bytes, at_once: bool = False) -> None:
        if self._failed is not None:
            raise self._failed
        if self._closed:
            raise ConnectionError("the connection is closed")
        self._waiting.append(data)
        self._size += len(data)
        if at_once:
            self._hand_over()
        elif self._size >= BATCH:
            self._hand_over()
            await asyncio.sleep(0)  # a long burst (a replay) lets the others run
        elif self._flush is None:
            self._flush = asyncio.get_running_loop().call_soon(self._hand_over)
        await self._writer.drain()

    def close(self) -> None:
        self._hand_over()
        self._closed = True

    def _hand_over(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        data = b"".join(self._waiting)
        self._waiting.clear()
        self._size = 0
        if data and not self._closed and self._failed is None:
            try:
                self._writer.write(data)
            except OSError as err:  # a file that cannot be written: the next send says so
                self._failed = err
