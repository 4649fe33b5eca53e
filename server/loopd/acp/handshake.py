"""`initialize` when the forwarder may have answered it already (`loopd.daemon.early`).

The stack always reads and answers the editor's first request itself: what the
forwarder read ahead of stdin is read first, so the agent learns the client's
capabilities as ever. `Handshaking` wraps the connection's transport and looks at
the answer to that first `initialize`:

- the forwarder gave it already: it is not sent again. It must be the same bytes;
  when it is not (a module changed under a stamp that says otherwise), the daemon's
  log says so and the right one is written down for the next start;
- `record`, when given, writes it down for the next forwarders (the daemon's),
  before it is sent: an editor that has its answer finds it written.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopd.acp.transport import BoundedNdjson
from loopd.streams.read_ahead import ReadAhead, answer_line

log = logging.getLogger(__name__)

Record = Callable[[object, str], None]  # (the request's params, the result's JSON)


@dataclass(frozen=True, slots=True)
class Handshake:
    """What this connection's start brings: read-ahead bytes, a recorder, or neither."""

    read_ahead: ReadAhead | None = None
    record: Record | None = None

    @property
    def pending(self) -> bytes:
        return b"" if self.read_ahead is None else self.read_ahead.pending


class Handshaking:
    """An `acp` Transport: `inner`, with the first `initialize`'s answer watched."""

    def __init__(self, inner: BoundedNdjson, handshake: Handshake) -> None:
        self._inner = inner
        self._handshake = handshake
        self._first = True
        self._asked: tuple[Any, object] | None = None  # the first initialize: id, params

    async def receive(self) -> dict[str, Any] | None:
        message = await self._inner.receive()
        if self._first and message is not None:
            self._first = False
            if message.get("method") == "initialize" and "id" in message:
                self._asked = (message["id"], message.get("params"))
        return message

    async def send(self, message: dict[str, Any]) -> None:
        asked = self._asked
        if asked is None or "method" in message or message.get("id") != asked[0]:
            await self._inner.send(message)
            return
        self._asked = None
        line = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        self._write_down(asked, message, line)  # first: an editor answered finds it written
        given = self._handshake.read_ahead
        if given is None or given.answer is None or given.answered_id != asked[0]:
            await self._inner.send(message)
        elif line != given.answer:
            log.warning("the forwarder's initialize answer was not this daemon's own")

    def _write_down(self, asked: tuple[Any, object], message: dict[str, Any], line: bytes) -> None:
        if self._handshake.record is None or "result" not in message:
            return
        result = json.dumps(message["result"], separators=(",", ":"))
        if answer_line(asked[0], result) != line:
            return  # not the shape a forwarder rebuilds: never written down
        try:
            self._handshake.record(asked[1], result)
        except OSError as err:
            log.warning("could not write down the initialize answer: %s", err)

    async def close(self) -> None:
        await self._inner.close()
