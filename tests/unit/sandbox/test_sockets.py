"""Unix sockets from inside each sandbox tier: a server outside `/tmp` (and one inside
the workspace, which commands can see) is out of reach by default; a socket the
person lists in `[sandbox] allow_unix_sockets` is reachable."""

from __future__ import annotations

import itertools
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_boxes import FAKE_KEY, Box, forced_probe

from loopd.policy.modes import Mode
from loopd.policy.network import NetworkGrant
from loopd.policy.tiers import Tier
from loopd.sandbox.base import CommandSpec
from loopd.sandbox.probe import select_sandbox

FILTERING = [Tier.BWRAP_LANDLOCK, Tier.BWRAP, Tier.LANDLOCK]


def connect(path: Path) -> str:
    return (
        'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
        f"s.connect('{path}'); s.sendall(b'hi'); print('REACHED')\""
    )


class Server:
    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(4)
        self.got: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.got.append(conn.recv(8))
            conn.close()


@pytest.fixture
def servers(workspace: Path, outside: Path) -> Iterator[tuple[Server, Server]]:
    found = (Server(outside / "db.sock"), Server(workspace / "in-ws.sock"))
    yield found
    for server in found:
        server.sock.close()


def box(tier: Tier, ws: Path, sockets: tuple[str, ...] = ()) -> Box:
    env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEY}
    grant = NetworkGrant()
    home = str(ws.parent / "home")
    sandbox = select_sandbox(
        Mode.ASK, forced_probe(tier), [str(ws)], grant, env, home=home, unix_sockets=sockets
    )
    return Box(tier, ws, grant, sandbox)


@pytest.mark.parametrize("tier", FILTERING)
def test_no_unix_socket_is_reachable_by_default(
    tier: Tier, workspace: Path, outside: Path, servers: tuple[Server, Server]
) -> None:
    run = box(tier, workspace).run(f"{connect(outside / 'db.sock')}; {connect('in-ws.sock')}")
    assert "REACHED" not in run.stdout
    assert run.stderr.count("Operation not permitted") == 2
    assert [s.got for s in servers] == [[], []]


@pytest.mark.parametrize("tier", FILTERING)
def test_a_listed_socket_is_reachable(
    tier: Tier, workspace: Path, outside: Path, servers: tuple[Server, Server]
) -> None:
    listed = str(outside / "db.sock")
    run = box(tier, workspace, (listed,)).run(connect(outside / "db.sock"))
    assert run.stdout.strip() == "REACHED", run.stderr
    assert servers[0].got == [b"hi"]


def test_a_listed_socket_shows_run_only_with_what_was_listed(workspace: Path) -> None:
    sandbox = box(Tier.BWRAP, workspace, ("/run/listed.sock",)).sandbox
    argv = sandbox.prepare(CommandSpec(("true",), str(workspace), (str(workspace),))).argv
    assert ("--tmpfs", "/run") in itertools.pairwise(argv)


@pytest.mark.parametrize("tier", [Tier.NETNS, Tier.NONE])
def test_the_tiers_without_the_filter_reach_every_socket_they_see(
    tier: Tier, workspace: Path, outside: Path, servers: tuple[Server, Server]
) -> None:
    """What the README says of the other two tiers (not named in the issue): no
    filter, so a Unix socket a command can see is reached."""
    run = box(tier, workspace).run(f"{connect(outside / 'db.sock')}; {connect('in-ws.sock')}")
    assert run.stdout.count("REACHED") == 2, run.stderr
