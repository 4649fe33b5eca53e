"""The daemon's control channel: frames round-trip with the descriptors they carry,
and anything else is refused without leaking a descriptor."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from loopd.daemon.frames import MAX_FRAME, BadFrame, receive, send


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        yield a, b


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_frame_carries_its_descriptors(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    read, write = os.pipe()
    send(a, {"op": "connect", "env": {"K": "v" * 100_000}}, fds=(read, write))
    message, fds = receive(b)
    assert message == {"op": "connect", "env": {"K": "v" * 100_000}}
    assert len(fds) == 2
    os.write(fds[1], b"through")
    assert os.read(read, 7) == b"through"
    for fd in (read, write, *fds):
        os.close(fd)


def test_frames_follow_each_other(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    send(a, {"ok": True})
    send(a, {"exit": 3})
    assert receive(b) == ({"ok": True}, [])
    assert receive(b) == ({"exit": 3}, [])
    a.close()
    with pytest.raises(EOFError):
        receive(b)


@pytest.mark.parametrize(
    "raw",
    [
        (MAX_FRAME + 1).to_bytes(4, "big"),  # a length past the cap: refused before reading
        (7).to_bytes(4, "big") + b"not json",
        (2).to_bytes(4, "big") + b"[]",  # JSON, not an object
        (10_000).to_bytes(4, "big") + b"[" * 5_000 + b"]" * 5_000,  # nested past the bound
        (100).to_bytes(4, "big") + b"{}",  # ends inside the frame
        b"\x00",  # ends inside the header
    ],
)
def test_anything_else_is_a_bad_frame_and_its_descriptors_are_closed(
    pair: tuple[socket.socket, socket.socket], raw: bytes
) -> None:
    a, b = pair
    read, write = os.pipe()
    socket.send_fds(a, [raw], [read])
    a.shutdown(socket.SHUT_WR)
    before = open_fds()
    with pytest.raises(BadFrame):
        receive(b)
    assert open_fds() == before  # the descriptor that came along was closed
    os.close(read)
    os.close(write)


def test_a_frame_is_compact_json(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    send(a, {"a": [1, 2]})
    raw = b.recv(100)
    assert raw[4:] == b'{"a":[1,2]}' and json.loads(raw[4:]) == {"a": [1, 2]}


def test_a_frame_sent_whole_with_its_descriptors_needs_nothing_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The daemon may read a forwarder's hello, answer and hang up the moment the
    hello is in: the forwarder then sends nothing more (an empty send to a closed
    peer fails with EPIPE, and the forwarder would give up on a daemon that was
    fine: seen under load, when a newer loopd replaces an idle daemon)."""
    ours, peer = socket.socketpair()
    real = socket.send_fds

    def then_hung_up(sock: socket.socket, buffers: Any, fds: Any) -> int:
        sent: int = real(sock, buffers, fds)
        peer.close()  # it read the whole frame, answered and closed
        return sent

    monkeypatch.setattr(socket, "send_fds", then_hung_up)
    with ours:
        send(ours, {"op": "connect"}, fds=[0])
