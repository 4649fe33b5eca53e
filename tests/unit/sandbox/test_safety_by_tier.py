"""What the README's Safety section promises of commands, checked in every tier the
table lists, `landlock` and `none` included: the sentences said of all tiers (a
scrubbed environment, absolute PATH entries only) and the table's network column
(bubblewrap and netns: off; landlock: TCP off from ABI 4, UDP on; none: on), with
the network not granted. Not named in the issue: the issue checked only `login.json`."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_boxes import FAKE_KEY, make_box

from loopd.policy.tiers import Tier
from loopd.sandbox.landlock import abi_version

EVERY = list(Tier)
MARK = b"marker from outside"


@pytest.mark.parametrize("tier", EVERY)
def test_commands_start_from_a_scrubbed_environment_in_every_tier(
    tier: Tier, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f".:bin::{os.environ['PATH']}")  # relative and empty entries
    monkeypatch.setenv("GITHUB_TOKEN", FAKE_KEY)
    said = make_box(tier, workspace).run("env")
    assert said.returncode == 0, said.stderr
    assert FAKE_KEY not in said.stdout and "API_KEY" not in said.stdout
    (path,) = [
        line.removeprefix("PATH=") for line in said.stdout.splitlines() if line.startswith("PATH=")
    ]
    assert path and all(entry.startswith("/") for entry in path.split(":")), path


@pytest.fixture
def datagrams() -> Iterator[socket.socket]:
    """A UDP socket on loopback, outside any sandbox."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        yield server


def arrived(server: socket.socket) -> bool:
    """Whether a datagram came before the marker sent now (loopback queues a datagram
    as it is sent, so what the finished command sent is already there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as marker:
        marker.sendto(MARK, server.getsockname())
    return server.recv(100) != MARK


def tcp_is_off(tier: Tier) -> bool:
    return tier is not Tier.NONE and (tier is not Tier.LANDLOCK or abi_version() >= 4)


@pytest.mark.parametrize("tier", EVERY)
def test_the_network_column_holds_as_written(
    tier: Tier, workspace: Path, listener: int, datagrams: socket.socket
) -> None:
    udp = datagrams.getsockname()[1]
    box = make_box(tier, workspace)
    tcp = box.run(f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected'")
    assert ("connected" in tcp.stdout) is not tcp_is_off(tier), tcp.stderr
    box.run(f"bash -c 'echo sent > /dev/udp/127.0.0.1/{udp}'")
    assert arrived(datagrams) is (tier in (Tier.LANDLOCK, Tier.NONE))
