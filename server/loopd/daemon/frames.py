"""The control channel between a forwarder (or `loopd daemon status|stop`) and the
daemon: frames of JSON, each after its length (4 bytes, big-endian), on the Unix
socket. A forwarder's first frame carries the editor's stdin, stdout and stderr as
descriptors (SCM_RIGHTS). Standard library only.

    forwarder -> daemon   {"op": "connect", "version", "protocol", "cwd", "env"}
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
    sock.sendall(data)


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The next frame and the descriptors that came with it (the caller owns and
    closes them). Raises EOFError when the peer closed before a frame began,
    `BadFrame` for anything malformed or too long."""
    data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, MAX_FDS)
    try:
        if not data:
            raise EOFError("the peer closed the connection")
        while len(data) < _HEADER:
            data += _more(sock)
        size = int.from_bytes(data[:_HEADER], "big")
        if size > MAX_FRAME:
            raise BadFrame(f"a frame of {size} bytes (at most {MAX_FRAME})")
        while len(data) < _HEADER + size:
            data += _more(sock)
        try:
            message = json.loads(data[_HEADER : _HEADER + size])
        except ValueError as err:
            raise BadFrame(f"a frame that is not JSON: {err}") from None
        if not isinstance(message, dict):
            raise BadFrame("a frame that is not a JSON object")
    except BaseException:
        for fd in fds:
            _close(fd)
        raise
    return message, fds


def _more(sock: socket.socket) -> bytes:
    chunk = sock.recv(1 << 16)
    if not chunk:
        raise BadFrame("the peer closed the connection inside a frame")
    return chunk


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
