"""The daemon's socket is this user's alone. A forwarder refuses a folder open to
others, a socket of another owner or with loose permissions, and never connects to
it: it serves the editor in its own process instead, and says why. The daemon
refuses a peer that runs as another user (SO_PEERCRED), even one that got through
a folder opened up after the daemon started."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from loopd.daemon.place import Place, place_of
from tests.e2e.acp.conftest import Home, raw_loopd
from tests.e2e.daemon.conftest import shared, status

pytestmark = pytest.mark.e2e
NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")


def place(home: Home) -> Place:
    found = place_of(shared(home))
    found.prepare()
    return found


async def served_apart(home: Home) -> str:
    """Start `loopd acp` with the daemon on; check it answers from its own process
    (no daemon serves it); its stderr."""
    async with raw_loopd(home, shared(home)) as editor:
        await editor.new_session(home.work)
        assert editor.proc.stdin is not None
        editor.proc.stdin.close()
        assert await asyncio.wait_for(editor.proc.wait(), 30) == 0
        assert editor.proc.stderr is not None
        told = (await editor.proc.stderr.read()).decode()
    found = await status(home)
    assert not found["running"] and found["refused"] in told
    log = Path(place_of(shared(home)).log)
    assert not await asyncio.to_thread(log.exists)  # no daemon was started either
    return told


def planted(where: Place) -> socket.socket:
    """A listening socket where the daemon's would be (an attacker's)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(where.endpoint)
    listener.listen(1)
    listener.setblocking(False)
    return listener


def never_connected(listener: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        listener.accept()


async def test_a_folder_open_to_others_is_refused(daemon_home: Home) -> None:
    where = place(daemon_home)
    os.chmod(where.folder, 0o755)
    listener = planted(where)
    told = await served_apart(daemon_home)
    assert "not using the loopd daemon" in told and "is open to others (mode 755)" in told
    never_connected(listener)


async def test_a_socket_open_to_others_is_refused(daemon_home: Home) -> None:
    where = place(daemon_home)
    listener = planted(where)
    os.chmod(where.endpoint, 0o666)
    told = await served_apart(daemon_home)
    assert f"the socket {where.endpoint} is open to others (mode 666)" in told
    never_connected(listener)


@as_root
async def test_a_socket_of_another_owner_is_refused(daemon_home: Home) -> None:
    where = place(daemon_home)
    listener = planted(where)
    os.chmod(where.endpoint, 0o600)
    os.chown(where.endpoint, NOBODY, NOBODY)
    told = await served_apart(daemon_home)
    assert f"the socket {where.endpoint} belongs to uid {NOBODY}" in told
    never_connected(listener)


@as_root
async def test_a_folder_of_another_owner_is_refused(daemon_home: Home) -> None:
    where = place(daemon_home)
    os.chown(where.folder, NOBODY, NOBODY)
    told = await served_apart(daemon_home)
    assert f"the folder {where.folder} belongs to uid {NOBODY}" in told


PEER = """\
import os, socket, sys
os.setgid(65534); os.setuid(65534)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
body = b'{"op":"status"}'
sock.settimeout(20)
try:
    sock.sendall(len(body).to_bytes(4, "big") + body)
    print(repr(sock.recv(100)) if sock.recv(1, socket.MSG_PEEK) else "hung up")
except (ConnectionResetError, BrokenPipeError):
    print("hung up")
"""


@as_root
async def test_the_daemon_refuses_a_peer_of_another_user(daemon_home: Home) -> None:
    async with raw_loopd(daemon_home, shared(daemon_home)) as editor:
        await editor.initialized()
        where = place_of(shared(daemon_home))
        for folder in [*reversed(Path(where.folder).parents), Path(where.folder)]:  # nobody in
            if folder.stat().st_mode & 0o001 == 0:
                folder.chmod(folder.stat().st_mode | 0o001)
        os.chmod(where.endpoint, 0o666)
        peer = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-c", PEER, str(where.endpoint)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert peer.stdout.strip() == "hung up", peer.stderr  # nothing said
        os.chmod(where.folder, 0o700)  # private again, for `loopd daemon status`
        os.chmod(where.endpoint, 0o600)
        log = await asyncio.to_thread(Path(where.log).read_text)
        assert f"refused a connection: the peer runs as uid {NOBODY}" in log
        assert (await status(daemon_home))["connections"] == 1  # its editor is unharmed
