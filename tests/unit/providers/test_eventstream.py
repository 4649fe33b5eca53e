"""The event-stream parser reads what httpx-sse reads, however the stream is cut
into reads; the endpoint hands a long read on in slices, yielding to the event loop
between them; and a success that is no event stream is a clear error."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from httpx_sse._decoders import SSEDecoder, SSELineDecoder
from hypothesis import example, given, settings
from hypothesis import strategies as st

from loopd.protocol.errors import BadRequest
from loopd.protocol.model import ModelRequest
from loopd.providers.anthropic import AnthropicProvider
from loopd.providers.eventstream import Event, EventParser
from loopd.providers.sse import BURST, _reads

ENDINGS = ("\n", "\r\n", "\r")
text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)))
field = st.one_of(
    st.tuples(st.sampled_from(["data", "event", "id", "retry", "other", ""]), text).map(
        lambda f: f"{f[0]}:{f[1]}" if f[0] or f[1] else ""
    ),
    st.sampled_from(["data", "data:", "data: x", ": keep-alive", "event", "event: ping"]),
    text.map(lambda t: f"data: {t}"),
)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(field, max_size=30))
    endings = [draw(st.sampled_from(ENDINGS)) for _ in lines]
    return "".join(line + end for line, end in zip(lines, endings, strict=True)).encode()


def by_httpx_sse(reads: list[bytes]) -> list[Event]:
    """What httpx-sse makes of the same bytes (its decoders, as `aiter_sse` runs
    them, flushing at the end as it does: a CR that ends the stream is a line end),
    keeping the events with data: the standard drops the rest, and no
    provider's decoder reads an event without data."""
    lines, events = SSELineDecoder(), SSEDecoder()
    decoder = __import__("codecs").getincrementaldecoder("utf-8")("replace")
    out: list[Event] = []
    decoded = [lines.decode(decoder.decode(read)) if read else [] for read in reads]
    for line in [*(line for batch in decoded for line in batch), *lines.flush()]:
        sse = events.decode(line.rstrip("\n"))
        if sse is not None and sse.data:
            out.append((sse.event, sse.data))
    return out


def by_parser(reads: list[bytes]) -> list[Event]:
    parser = EventParser()
    return [e for read in reads for e in parser.feed(read) if e[1]]


@settings(max_examples=400, deadline=None)
@given(streams(), st.lists(st.integers(0, 200), max_size=8))
@example(b"data:\ndata\ndata:\n\r", [])  # empty data lines, then a CR that ends the stream
def test_the_parser_reads_what_httpx_sse_reads_however_the_stream_is_cut(
    stream: bytes, cuts: list[int]
) -> None:
    points = sorted({min(c, len(stream)) for c in cuts})
    reads = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert by_parser(reads) == by_httpx_sse(reads)


def test_line_endings_split_between_reads() -> None:
    parser = EventParser()
    assert parser.feed(b"event: a\r") == []
    assert parser.feed(b"\ndata: 1\r") == []
    assert parser.feed(b"\n\r") == [("a", "1")]  # CRLF, then a CR alone: a blank line
    assert parser.feed(b"\ndata: 2\n") == []  # that CR's LF ends no second line
    assert parser.feed(b"data: 3\n\n") == [("message", "2\n3")]


def test_an_event_the_stream_ends_inside_is_not_dispatched() -> None:
    parser = EventParser()
    assert parser.feed(b"data: whole\n\ndata: cut") == [("message", "whole")]
    assert parser.feed(b" off\n") == []


def test_multibyte_text_split_between_reads() -> None:
    data = 'data: {"t": "caf\u00e9 \u2014 \U0001f600"}\n\n'.encode()
    parser = EventParser()
    events = [e for i in range(len(data)) for e in parser.feed(data[i : i + 1])]
    assert events == [("message", '{"t": "caf\u00e9 \u2014 \U0001f600"}')]


async def _body(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def test_a_long_read_is_handed_on_in_slices_with_the_loop_running_between() -> None:
    """One read of 3.5 slices' worth of events: four slices, in order, nothing lost;
    a callback made ready before the first slice runs before the second (the loop
    got the thread back), not after the whole read."""
    count = BURST * 3 + BURST // 2
    read = b"".join(b"data: %d\n\n" % i for i in range(count))
    response = httpx.Response(200, content=_body([read, b"data: last\n\n"]))
    order: list[str] = []
    asyncio.get_running_loop().call_soon(order.append, "other work")
    slices: list[list[Event]] = []
    async for events in _reads(response):
        order.append(f"slice {len(slices)}")
        slices.append(events)
    assert [len(s) for s in slices] == [BURST, BURST, BURST, BURST // 2, 1]
    assert [d for s in slices for _, d in s] == [*map(str, range(count)), "last"]
    assert order.index("other work") == 1  # right after the first slice


class _Html(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        body = b"<html>please log in</html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def html_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Html)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_a_success_that_is_no_event_stream_is_a_clear_error(html_server: str) -> None:
    provider = AnthropicProvider(api_key="k", base_url=html_server)
    request = ModelRequest(model="m", system="", messages=())
    try:
        with pytest.raises(
            BadRequest, match="expected an event stream, got content type 'text/html'"
        ):
            async for _ in provider.stream(request):
                pass
    finally:
        await provider.aclose()


@pytest.mark.parametrize(
    "reads",
    [
        [b"data: " + b"x" * 40] * 10,  # a line that never ends
        [b"data: " + b"x" * 30 + b"\n"] * 10,  # data lines with no blank line after them
    ],
)
def test_an_event_that_never_ends_is_refused_before_it_exhausts_memory(
    reads: list[bytes],
) -> None:
    parser = EventParser(max_event=200)
    with pytest.raises(BadRequest, match="over 200 bytes"):
        for read in reads:
            parser.feed(read)


def test_events_under_the_bound_are_read_however_many_come() -> None:
    parser = EventParser(max_event=200)
    events = [e for _ in range(100) for e in parser.feed(b"data: " + b"x" * 150 + b"\n\n")]
    assert events == [("message", "x" * 150)] * 100
