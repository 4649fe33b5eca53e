"""The host side of network by domain: an HTTP forward proxy (absolute-form requests
and `CONNECT`) and a SOCKS5 proxy on one Unix socket, which loopd binds into the
sandbox (`loopd.sandbox.relay` carries a command's TCP to it).

It never decrypts: `CONNECT` and SOCKS5 relay bytes as they are, so TLS stays
between the command and the server. Each connection names one host and port; the
`Door` (`loopd.sandbox.netgate`) decides it, resolves it once, checks the address
and dials it; the proxy only speaks the protocols. The first byte tells them apart
(5 is SOCKS5; HTTP starts with a method name).

Bounded: at most 128 connections at once per socket; a request head is at most
64 KiB and must arrive within 30 s; a plain HTTP
request is forwarded with `Connection: close`, so one proxy connection carries one
request to the host it named, never a second one to another host, and its `Host`
header is the host that was judged (a client cannot front for another site sharing
the server, as through a CDN, in plain HTTP; inside a `CONNECT` tunnel it can, since
TLS is not opened).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from loopd.policy.domains import split_host_port

log = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
HEAD_TIMEOUT = 30.0
CHUNK = 64 * 1024
MAX_CONNECTIONS = 128
_DROPPED = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive", b"host")

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@dataclass(frozen=True, slots=True)
class Refused:
    reason: str  # names the host and why, for the command's own error message


class Door(Protocol):
    async def open(self, host: str, port: int) -> Streams | Refused: ...


class BadRequest(Exception):
    """The client spoke neither protocol well enough to name a host."""


@dataclass(eq=False)
class ProxyServer:
    """One listening socket and the connections it holds. At most `MAX_CONNECTIONS`
    at once: a command that opens more gets the extra ones closed, so it cannot
    exhaust loopd's descriptors (loopd serves every editor)."""

    door: Door
    server: asyncio.Server | None = None
    open_writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.open_writers) >= MAX_CONNECTIONS:
            writer.close()
            return
        self.open_writers.add(writer)
        try:
            await _connection(reader, writer, self.door)
        except (BadRequest, TimeoutError, asyncio.IncompleteReadError, ValueError):
            pass  # a client that cannot name a host gets nothing
        except OSError as err:
            log.debug("proxy connection ended: %s", err)
        finally:
            self.open_writers.discard(writer)
            writer.close()

    def close(self) -> None:
        """Stop listening and end every connection still open."""
        if self.server is not None:
            self.server.close()
        for writer in list(self.open_writers):
            writer.close()


async def serve(path: str, door: Door) -> ProxyServer:
    """Listen on the Unix socket `path` (which must not exist)."""
    proxy = ProxyServer(door)
    proxy.server = await asyncio.start_unix_server(proxy.handle, path, limit=HEAD_LIMIT)
    return proxy


async def _connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, door: Door
) -> None:
    first = await asyncio.wait_for(reader.readexactly(1), HEAD_TIMEOUT)
    if first == b"\x05":
        await _socks5(reader, writer, door)
        return
    head = first + await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
    line, _, rest = head.partition(b"\r\n")
    parts = line.split(b" ")
    if len(parts) != 3:
        raise BadRequest(line)
    method, target, version = parts
    if method == b"CONNECT":
        await _connect(target.decode("ascii"), reader, writer, door)
    else:
        await _forward(method, target.decode("ascii"), version, rest, reader, writer, door)


async def _connect(
    target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, door: Door
) -> None:
    host, port = split_host_port(target, None)
    if port is None:
        raise BadRequest(target)
    opened = await door.open(host, port)
    if isinstance(opened, Refused):
        await _refuse(writer, opened)
        return
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await splice((reader, writer), opened)


async def _forward(
    method: bytes,
    target: str,
    version: bytes,
    rest: bytes,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    door: Door,
) -> None:
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        raise BadRequest(target)
    opened = await door.open(url.hostname, url.port or 80)
    if isinstance(opened, Refused):
        await _refuse(writer, opened)
        return
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    host = url.netloc.rpartition("@")[2].encode("ascii")  # the host judged, never another
    headers = [
        h for h in rest.split(b"\r\n") if h and h.split(b":")[0].strip().lower() not in _DROPPED
    ]
    upstream = opened[1]
    upstream.write(b" ".join((method, path.encode("ascii"), version)) + b"\r\n")
    upstream.write(b"Host: " + host + b"\r\n" + b"".join(h + b"\r\n" for h in headers))
    upstream.write(b"Connection: close\r\n\r\n")
    await splice((reader, writer), opened)


async def _refuse(writer: asyncio.StreamWriter, refused: Refused) -> None:
    body = f"loopd refused this connection: {refused.reason}\n".encode()
    writer.write(
        b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


_SOCKS_OK, _SOCKS_REFUSED, _SOCKS_COMMAND, _SOCKS_ADDRESS = 0, 2, 7, 8


async def _socks5(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, door: Door) -> None:
    """RFC 1928, no authentication, CONNECT only."""
    read: Callable[[int], Awaitable[bytes]] = lambda n: asyncio.wait_for(  # noqa: E731
        reader.readexactly(n), HEAD_TIMEOUT
    )
    methods = await read((await read(1))[0])
    if 0 not in methods:
        writer.write(b"\x05\xff")
        return
    writer.write(b"\x05\x00")
    version, command, _, kind = await read(4)
    if version != 5 or command != 1:
        writer.write(_socks_reply(_SOCKS_COMMAND))
        return
    match kind:
        case 1:
            host = ".".join(str(b) for b in await read(4))
        case 3:
            host = (await read((await read(1))[0])).decode("idna")
        case 4:
            raw = await read(16)
            host = ":".join(raw[i : i + 2].hex() for i in range(0, 16, 2))
        case _:
            writer.write(_socks_reply(_SOCKS_ADDRESS))
            return
    (port,) = struct.unpack("!H", await read(2))
    opened = await door.open(host, port)
    if isinstance(opened, Refused):
        writer.write(_socks_reply(_SOCKS_REFUSED))
        return
    writer.write(_socks_reply(_SOCKS_OK))
    await splice((reader, writer), opened)


def _socks_reply(code: int) -> bytes:
    return bytes((5, code, 0, 1, 0, 0, 0, 0, 0, 0))


async def splice(a: Streams, b: Streams) -> None:
    """Copy both ways until both sides are done, then close the upstream."""
    try:
        await asyncio.gather(_copy(a[0], b[1]), _copy(b[0], a[1]))
    finally:
        b[1].close()


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except OSError:
        sink.close()
