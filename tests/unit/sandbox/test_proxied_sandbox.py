"""A command in the bubblewrap tiers with the network proxy bound in: the proxy is its
only way out, and the relay that carries it cannot be turned into another.

Real bwrap, a real lease on its Unix socket, a loopback server standing for a host.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.unit.sandbox.sandbox_boxes import Box, make_box

from loopd.policy.domains import DomainLists
from loopd.policy.tiers import Tier
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.sandbox.base import CommandSpec
from loopd.sandbox.netgate import Lease, NetworkGate
from loopd.sandbox.relay import INSIDE_SOCKET
from loopd.sandbox.resolve import HookedNetwork

PUBLIC = "93.184.216.34"
PROBE = (
    "import socket, sys\n"
    "s = socket.create_connection(('127.0.0.1', 3128)); s.sendall(b'GET http://pypi.test/ "
    "HTTP/1.0\\r\\n\\r\\n')\n"
    "print(s.recv(100).decode())\n"
)


async def refuse(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision.REJECT_ONCE


@pytest.fixture
async def host_port() -> AsyncIterator[int]:
    """A loopback server outside the sandbox: answers `reached` to anything."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        writer.write(b"HTTP/1.0 200 OK\r\n\r\nreached")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


@pytest.fixture(params=[Tier.BWRAP, Tier.BWRAP_LANDLOCK])
def box(request: pytest.FixtureRequest, workspace: Path) -> Box:
    return make_box(request.param, workspace)


async def run(box: Box, lease: Lease, script: str) -> str:
    spec = CommandSpec(("bash", "-c", script), str(box.ws), (str(box.ws),), True, lease.socket)
    prepared = box.sandbox.prepare(spec)
    process = await asyncio.create_subprocess_exec(
        *prepared.argv,
        env=dict(prepared.env),
        cwd=prepared.cwd,
        preexec_fn=prepared.preexec,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 30)
    return out.decode()


def session(port: int) -> NetworkGate:
    hook = json.dumps({"resolve": {"pypi.test": PUBLIC}, "dial": {f"{PUBLIC}:80": port}})
    return NetworkGate(
        DomainLists.parse(["pypi.test"], ()), refuse, "s1", HookedNetwork.parse(hook)
    )


async def test_the_proxy_is_the_only_way_out_even_with_the_network_granted(
    box: Box, host_port: int
) -> None:
    box.grant.grant()  # a whole-network grant does not apply beside the proxy
    async with session(host_port).lease("c1", "x") as lease:
        out = await run(
            box,
            lease,
            f'python3 -c "{PROBE}"; echo > /dev/tcp/127.0.0.1/{host_port} && echo RAW-OK; '
            "echo $HTTP_PROXY $https_proxy $ALL_PROXY",
        )
    assert "reached" in out
    assert "RAW-OK" not in out and "Connection refused" in out
    assert "http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128" in out


async def test_the_command_cannot_open_unix_sockets_or_take_over_the_relay(
    box: Box, host_port: int
) -> None:
    take_over = (
        "import os, socket\n"
        "try:\n    socket.socket(socket.AF_UNIX); print('UNIX-OK')\n"
        "except OSError as e: print('unix', e.errno)\n"
        "me = os.getpid()\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    argv = open(f'/proc/{pid}/cmdline','rb').read().split(bytes(1))\n"
        "    if int(pid) != me and any(a.endswith(b'landlock_syscalls.py') for a in argv[:4]):\n"
        "        try:\n            open(f'/proc/{pid}/mem','rb'); print('MEM-OK')\n"
        "        except OSError as e: print('mem', e.errno)\n"
    )
    async with session(host_port).lease("c1", "x") as lease:
        out = await run(
            box,
            lease,
            f'python3 -c "{take_over}"; rm -f {INSIDE_SOCKET}; mv {INSIDE_SOCKET} /tmp/x; '
            f'python3 -c "{PROBE}"',
        )
        socket_kept = await asyncio.to_thread(Path(lease.socket).exists)
    assert "UNIX-OK" not in out and "unix 1" in out
    assert "MEM-OK" not in out and out.count("mem 13") == 1  # the relay, not dumpable
    assert "reached" in out and socket_kept
