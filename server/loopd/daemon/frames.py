"""The control channel between a forwarder (or `loopd daemon status|stop`) and the
daemon: frames of JSON, each after its length (4 bytes, big-endian), on the Unix
socket. A forwarder's first frame carries the editor's stdin, stdout and stderr as
descriptors (SCM_RIGHTS). Standard library only.

    forwarder -> daemon   {"op": "connect", "version", "protocol", "data", "cwd", "env",
                           "early"?: {"key", "readAhead"} (`loopd.daemon.early`)}
                          {"op": "status" | "stop", "version"}
    daemon -> forwarder   {"ok": true, "pid"} | {"ok": false, "error", "version", "idle"}
                          ... then, at the connection's end, {"exit": code}
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Sequence
from typing import Any

from loopd.protocol.jsonvalues import loads_bounded

LISTENING, LOST = b"L", b"O"  # a new daemon on its `--ready` pipe: it listens; another won
MAX_FRAME = 8 << 20  # an environment and some arguments; far more is an attack
MAX_FDS = 3
_HEADER = 4


class BadFrame(Exception):
    """The peer sent something that is not a frame of this channel."""


def send(sock: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    body = json.dumps(message, separators=(",", ":")).encode()
    data = len(body).to_bytes(_HEADER, "big") + body
    if fds:
        sent = socket.send_fds(sock, [data], list(fds))
        data = data[sent:]
    if data:  # not an empty send: the peer may have answered and closed already
        sock.sendall(data)


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The next frame and the descriptors that came with it (the caller owns and
    closes them). Reads exactly one frame, never into the next. Raises EOFError
    when the peer closed before a frame began, `BadFrame` for anything malformed
    or too long."""
    header, fds, _flags, _addr = socket.recv_fds(sock, _HEADER, MAX_FDS)
    try:
        _begun(header)
        header += _exactly(sock, _HEADER - len(header))
        message = _message(_exactly(sock, _size(header)))
    except BaseException:
        for fd in fds:
            _close(fd)
        raise
    return message, fds


async def receive_within(sock: socket.socket, seconds: float) -> tuple[dict[str, Any], list[int]]:
    """`receive` on the running event loop, the whole frame within `seconds` (else
    TimeoutError): a peer that sends slowly, or nothing, holds no thread and no
    more than its deadline. The socket is left non-blocking."""
    import asyncio  # the daemon's alone: the forwarder's fast path never loads it

    loop = asyncio.get_running_loop()
    sock.setblocking(False)
    fds: list[int] = []
    try:
        async with asyncio.timeout(seconds):
            while True:
                try:
                    header, fds, _flags, _addr = socket.recv_fds(sock, _HEADER, MAX_FDS)
                    break
                except BlockingIOError:
                    readable = loop.create_future()
                    loop.add_reader(sock.fileno(), readable.set_result, None)
                    try:
                        await readable
                    finally:
                        loop.remove_reader(sock.fileno())
            _begun(header)
            header += await _exactly_soon(loop, sock, _HEADER - len(header))
            return _message(await _exactly_soon(loop, sock, _size(header))), fds
    except BaseException:
        for fd in fds:
            _close(fd)
        raise


def _begun(header: bytes) -> None:
    if not header:
        raise EOFError("the peer closed the connection")


def _size(header: bytes) -> int:
    size = int.from_bytes(header, "big")
    if size > MAX_FRAME:
        raise BadFrame(f"a frame of {size} bytes (at most {MAX_FRAME})")
    return size


def _message(body: bytes) -> dict[str, Any]:
    try:
        message = loads_bounded(body)
    except ValueError as err:
        raise BadFrame(f"a frame that is not JSON: {err}") from None
    if not isinstance(message, dict):
        raise BadFrame("a frame that is not a JSON object")
    return message


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise _cut()
        data += chunk
    return bytes(data)


async def _exactly_soon(loop: Any, sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = await loop.sock_recv(sock, min(size - len(data), 1 << 20))
        if not chunk:
            raise _cut()
        data += chunk
    return bytes(data)


def _cut() -> BadFrame:
    return BadFrame("the peer closed the connection inside a frame")


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
