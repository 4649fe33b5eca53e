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
the stream ends, before the SDK hears of it and closes the connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from acp.task import MessageSender, TaskSupervisor

from loopd.protocol.jsonvalues import loads_bounded
from loopd.streams.lines import LineReader, Overlong

log = logging.getLogger(__name__)

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
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
    ) -> None:
        self._lines = LineReader(reader, max_line)
        self._tasks = TaskSupervisor(source="loopd.acp.transport")
        self._sender = MessageSender(writer, self._tasks)  # the SDK's ordered writer
        self._pace = pace
        self._at_end = at_end

    async def send(self, message: dict[str, Any]) -> None:
        await self._sender.send(message)

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
        """Stop writing; the streams belong to whoever opened them."""
        await self._sender.close()
        await self._tasks.shutdown()

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
