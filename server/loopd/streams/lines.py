"""Reading a protocol stream in bounded pieces, for `loopd acp` and `loopd lsp`.

Both frontends read what an editor (or anything that can write to their stdin or
socket) sends. asyncio's `StreamReader.readline` either fails for good on a line over
its limit (pygls then stops reading) or, as the ACP SDK uses it, gathers the whole
line whatever its size (a 100 MB line without a newline is 100 MB of memory, and
more). `LineReader` instead holds at most `max_line` bytes of a line: a longer one is
dropped as it streams in and reported as `Overlong`, and reading goes on with what
follows, so one bad line costs one error answer, never the connection.

`resync` names bytes that start a new message whatever came before (LSP's
`Content-Length:`): when they appear in the middle of a dropped line, reading
resumes there, so a frame glued to garbage is not lost with it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

CHUNK = 64 * 1024
PREFIX = 4096


@dataclass(frozen=True, slots=True)
class Overlong:
    """A line over the limit was dropped; `prefix` is how it began (where a JSON-RPC
    request's id usually is), `size` how many bytes were dropped."""

    prefix: bytes
    size: int


class LineReader:
    """Lines (terminator included) and exact byte counts from `source`, with a
    push-back buffer for bytes read ahead that belong to the next message."""

    def __init__(
        self, source: asyncio.StreamReader, max_line: int, resync: bytes | None = None
    ) -> None:
        self._source = source
        self.max_line = max_line
        self._resync = resync
        self._buf = bytearray()
        self._scanned = 0  # bytes of `_buf` already searched for a newline

    def unread(self, data: bytes) -> None:
        """Put `data` back in front of what is still to be read."""
        self._buf[:0] = data
        self._scanned = 0

    async def line(self) -> bytes | Overlong | None:
        """The next line, with its `\\n` (the last line of the stream may lack it);
        `Overlong` for a line over `max_line`; None at the end of the stream."""
        while True:
            end = self._buf.find(b"\n", self._scanned)
            if end >= 0:
                return self._take(end + 1)
            if len(self._buf) > self.max_line:
                return await self._drop()
            self._scanned = len(self._buf)
            chunk = await self._source.read(CHUNK)
            if not chunk:
                rest = self._take(len(self._buf))
                return rest or None
            self._buf += chunk

    async def exactly(self, size: int) -> bytes | None:
        """The next `size` bytes, or None when the stream ends first."""
        while len(self._buf) < size:
            chunk = await self._source.read(max(CHUNK, size - len(self._buf)))
            if not chunk:
                return None
            self._buf += chunk
        return self._take(size)

    def _take(self, size: int) -> bytes:
        data = bytes(self._buf[:size])
        del self._buf[:size]
        self._scanned = 0
        return data

    async def _drop(self) -> Overlong:
        """Discard the current line up to its newline (or the resync marker, which is
        kept), holding no more than a chunk of it at a time."""
        prefix = bytes(self._buf[:PREFIX])
        dropped = 0
        keep = len(self._resync) - 1 if self._resync else 0
        while True:
            stop = self._stop_at()
            if stop is not None:
                dropped += stop
                del self._buf[:stop]
                self._scanned = 0
                return Overlong(prefix, dropped)
            cut = max(0, len(self._buf) - keep)  # a marker may straddle two chunks
            dropped += cut
            del self._buf[:cut]
            chunk = await self._source.read(CHUNK)
            if not chunk:
                dropped += len(self._buf)
                self._buf.clear()
                return Overlong(prefix, dropped)
            self._buf += chunk

    def _stop_at(self) -> int | None:
        """Where the dropped line ends: after its newline, or at the resync marker."""
        newline = self._buf.find(b"\n")
        marker = self._buf.find(self._resync, 1) if self._resync else -1
        found = [i for i in (newline + 1 if newline >= 0 else -1, marker) if i > 0]
        return min(found) if found else None
