"""The HTTP + SSE plumbing every provider shares.

`SseEndpoint.events` posts one JSON request (already encoded: see body.py) and
yields the server-sent events of a successful reply. It owns what is the same for
every format: a non-2xx status is read as a JSON error body and classified *before*
any SSE parsing (its content type is no event stream, and saying so would hide the
real error), and a success that is not an event stream is a `BadRequest`; every
read has an idle timeout (httpx's
read timeout applies per read, not to the whole stream, so a long healthy stream
never times out but a stalled one does); and transport failures become `Transient`
(or `IncompleteStream` once events have arrived). The events are parsed a read at a
time (`loopd.providers.eventstream`) and handed on in slices of `BURST`, yielding to
the event loop between them, so one stream's backlog never holds up the others.
Recognising the terminal event is the format's job: the decoders raise
`IncompleteStream` when it never came.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Protocol

import httpx
from httpx_sse import aconnect_sse

from loopd.protocol.errors import BadRequest, IncompleteStream, StreamStalled, Transient
from loopd.protocol.jsonvalues import loads_bounded, loads_strict
from loopd.protocol.model import INVALID_JSON_KEY, ModelRequest, ResponseDone, StreamEvent
from loopd.providers.classify import error_from_response
from loopd.providers.eventstream import Event, EventParser

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT = 60.0
"""Seconds without a byte (before the reply starts, or between two reads of it)
before a stream counts as stalled (`[limits] stream_idle_seconds`). Anthropic sends
pings well within this while a model thinks; an endpoint that stays silent while a
reasoning model thinks at high effort may need more. The engine retries a stall
once, so a dead stream ends a turn in about twice this, not ten minutes."""

JsonObject = dict[str, Any]


def bearer_auth(api_key: str) -> dict[str, str]:
    """The `Authorization` header for `api_key`; none without a key. A keyless local
    server (Ollama, LM Studio, vLLM) needs no header, and `Bearer ` with nothing after
    it is an invalid header value that httpx refuses before sending."""
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


def new_client() -> httpx.AsyncClient:
    """The client providers share: connection pooling across requests and providers.
    Timeouts are set per request, so one client serves endpoints with different idle
    timeouts. Made with the provider, off the path of a prompt: so is everything its
    first request would otherwise load (`prepare_transport`)."""
    prepare_transport()
    return httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=10.0), verify=_tls())


@functools.cache
def prepare_transport() -> None:
    """Load, once, what the first request would: httpcore picks its network backend
    when it opens its first connection, and that imports anyio's asyncio backend,
    20-30 ms that would fall between the first prompt and its request reaching the
    model; and the TLS context. A daemon calls it as it starts, so no editor's
    build pays it either. A head start only: the backends are private modules, and
    a release that moves them loses the head start, never the provider. (httpcore
    also asks sniffio which loop runs when sniffio happens to be installed; nothing
    loopd depends on needs it, so it is not loaded here.)"""
    try:
        import anyio._backends._asyncio  # noqa: F401
        import httpcore._backends.anyio  # noqa: F401
    except ImportError:
        log.debug("the transport's backends moved: the first request loads them", exc_info=True)
    _tls()


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default verifying context (certifi, or SSL_CERT_FILE/SSL_CERT_DIR),
    built once: loading the CA bundle costs ~50 ms, and a context is safe to share
    between clients."""
    return httpx.create_ssl_context()


class SseEndpoint:
    """One model endpoint: base URL, fixed headers and the (possibly shared) client.

    A client passed in is borrowed and left open by `aclose`; without one the
    endpoint makes its own and closes it."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        *,
        client: httpx.AsyncClient | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {
            "accept": "text/event-stream",
            "content-type": "application/json",
            **headers,
        }
        self._client = client or new_client()
        self._owns_client = client is None
        self._timeout = httpx.Timeout(30.0, connect=10.0, read=idle_timeout)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def stream(
        self, path: str, body: bytes, decoder: Decoder
    ) -> AsyncGenerator[StreamEvent, None]:
        """POST the JSON `body` to `path`, run `decoder` over the events as they arrive,
        stop reading at the terminal event, and end with exactly one `ResponseDone`.
        Raises a classified `ProviderError` for an error status, a timeout or a broken
        connection, and `BadRequest` for a success that is not an event stream. One
        generator from socket to engine: this is the hot path."""
        url = self.base_url + path
        started = False
        try:
            async with aconnect_sse(
                self._client, "POST", url, content=body, headers=self.headers, timeout=self._timeout
            ) as source:
                response = source.response
                if not response.is_success:
                    await response.aread()
                    raise error_from_response(
                        response.status_code, response.headers, response.content
                    )
                _require_event_stream(url, response)
                async with contextlib.aclosing(_reads(response)) as reads:
                    async for events in reads:
                        started = True
                        for event, data in events:
                            for item in decoder.feed(event, data):
                                yield item
                            if decoder.done:
                                break
                        if decoder.done:
                            break
        except httpx.ReadTimeout as exc:
            idle = self._timeout.read or 0.0
            raise StreamStalled(
                f"no data from the model for {idle:g} s", idle_seconds=idle
            ) from exc
        except httpx.TimeoutException as exc:
            raise Transient(f"{url}: timed out ({exc!r})") from exc
        except httpx.TransportError as exc:
            if started:
                raise IncompleteStream(f"{url}: connection lost mid-stream ({exc!r})") from exc
            raise Transient(f"{url}: connection failed ({exc!r})") from exc
        yield decoder.finish()


BURST = 64
"""Events parsed per turn of the event loop, at most. One network read can hold
hundreds of events (up to 64 KiB: a reply that arrived while the loop was busy
elsewhere); parsed in one go, it held the loop for milliseconds while every other
turn waited, a new turn's first chunk among them. Between slices the loop runs
whatever else is ready; at about 10 us an event, a slice is well under one."""


async def _reads(response: httpx.Response) -> AsyncGenerator[list[Event], None]:
    """The response's events, in slices of at most `BURST`, yielding to the event loop
    between the slices of one read (each read yields on its own: it waits for the
    network, or anyio checkpoints when data was already there)."""
    parser = EventParser()
    async for chunk in response.aiter_bytes():
        events = parser.feed(chunk)
        for start in range(0, len(events), BURST):
            if start:
                await asyncio.sleep(0)
            yield events[start : start + BURST]


def _require_event_stream(url: str, response: httpx.Response) -> None:
    """A success that is no event stream (a proxy's login page, a misconfigured base
    URL) is a clear `BadRequest`, never a reply parsed out of HTML."""
    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if "text/event-stream" not in kind:
        raise BadRequest(f"{url}: expected an event stream, got content type {kind or 'none'!r}")


class Encoder(Protocol):
    """Request bodies of one wire format, from cached fragments (see body.py)."""

    def encode(self, request: ModelRequest) -> bytes: ...


class SseProvider:
    """The shape every provider shares: one endpoint, one path, an encoder kept for
    the provider's life (its cache is the point) and a fresh decoder per reply.
    Subclasses only say how to authenticate and which format to speak."""

    def __init__(
        self,
        endpoint: SseEndpoint,
        path: str,
        encoder: Encoder,
        decoder: Callable[[], Decoder],
    ) -> None:
        self._endpoint = endpoint
        self._path = path
        self._encoder = encoder
        self._decoder = decoder

    async def aclose(self) -> None:
        await self._endpoint.aclose()

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._endpoint.stream(self._path, self._encoder.encode(request), self._decoder())


def load_event(data: str) -> JsonObject | None:
    """Parse one event's data. Empty data and non-object JSON are skipped (logged),
    never fatal: servers add keep-alives and the formats grow."""
    if not data:
        return None
    try:
        value = loads_bounded(data)
    except ValueError:
        log.warning("ignoring an event that is not JSON: %.80r", data)
        return None
    return value if isinstance(value, dict) else None


def parse_tool_input(raw: str) -> dict[str, Any]:
    """A tool call's arguments, parsed. Empty means no arguments; anything that is
    not a JSON object (truncated by max_tokens, say) comes back under
    `INVALID_JSON_KEY` so the engine can report it as a tool error. So does a
    non-finite number (`NaN`, `Infinity`, `1e999`): it is not JSON, and in the
    history it would fail every later request (see `loopd.protocol.jsonvalues`)."""
    if not raw.strip():
        return {}
    try:
        value = loads_strict(raw)
    except ValueError:
        return {INVALID_JSON_KEY: raw}
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: raw}


def data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


class Decoder(Protocol):
    """One format's stream assembly: fed each event in order, it yields the deltas;
    `done` says the terminal event came (stop reading); `finish` assembles the reply
    when the stream ends, raising `IncompleteStream` if it ended too early."""

    @property
    def done(self) -> bool: ...

    def feed(self, event: str, data: str) -> Iterable[StreamEvent]: ...

    def finish(self) -> ResponseDone: ...


def incomplete(terminal: str) -> IncompleteStream:
    return IncompleteStream(f"the stream closed before {terminal}")
