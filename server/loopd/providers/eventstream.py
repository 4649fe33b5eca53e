"""Server-sent events from the bytes of a response, a whole read at a time.

httpx-sse decodes a stream through four generators (bytes, text, lines, events),
one Python step per line: on a 2,000-event reply that was most of loopd's time
between the socket and the screen. `EventParser.feed` takes each network read as it
came and returns every event it completes, in one call: lines are split at C speed
(`bytes.split`), and only the fields loopd reads are kept.

It reads what the HTML standard's event-stream interpretation says: lines end with
CRLF, LF or CR (a CR that ends one read ends its line, and an LF opening the next
read is that CR's); a blank line dispatches the event gathered so far if it has
data (a name alone is dropped, as the standard says); a line starting with `:` is
a comment; `field: value` loses one space after the colon, and a line without a
colon is a field with an empty value; `data` lines join with LF; `id`, `retry` and
unknown fields are ignored (no provider resumes a stream); an event without a name
is a "message". An event the stream ends inside (no blank line after it) is never
dispatched. Text is UTF-8; a byte that is not becomes U+FFFD.

An event (its data and the line not yet ended) is bounded by `MAX_EVENT_BYTES`: a
server that never ends a line or an event is refused with a `BadRequest` (retrying
would only ask for the same again) before it exhausts memory; the bound also keeps
a long line's reads from being joined again and again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loopd.protocol.errors import BadRequest

MAX_EVENT_BYTES = 16 << 20  # 16 MiB: far above any provider's event (a tool call's JSON)
Event = tuple[str, str]  # (event type, "message" when the stream named none; data)


@dataclass(slots=True)
class EventParser:
    """One stream's parser: feed it the reads in order; it keeps what a read ended in
    the middle of (a partial line, an event not yet dispatched)."""

    _tail: bytes = b""  # the last line, not ended yet
    _skip_lf: bool = False  # the last read ended in CR: an LF opening the next ends no line
    _name: bytes = b""
    _data: list[bytes] = field(default_factory=list)
    _size: int = 0  # of `_data`
    max_event: int = MAX_EVENT_BYTES

    def feed(self, chunk: bytes) -> list[Event]:
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        buffer = self._tail + chunk if self._tail else chunk
        if b"\r" in buffer:
            self._skip_lf = buffer.endswith(b"\r")
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buffer.split(b"\n")
        self._tail = lines.pop()
        events = self._events(lines)
        if self._size + len(self._tail) > self.max_event:
            raise BadRequest(
                f"the model's stream sent an event over {self.max_event} bytes without "
                "ending it; the reply was abandoned"
            )
        return events

    def _events(self, lines: list[bytes]) -> list[Event]:
        events: list[Event] = []
        for line in lines:
            if not line:  # dispatch, when there is data (a name alone is dropped)
                if self._data:
                    data = b"\n".join(self._data).decode("utf-8", "replace")
                    kind = self._name.decode("utf-8", "replace") if self._name else "message"
                    events.append((kind, data))
                self._name, self._data, self._size = b"", [], 0
                continue
            name, colon, value = line.partition(b":")
            if not name and colon:
                continue  # a comment (keep-alives are sent as these)
            if value.startswith(b" "):
                value = value[1:]
            if name == b"data":
                self._data.append(value)
                self._size += len(value) + 1
            elif name == b"event":
                self._name = value
        return events
