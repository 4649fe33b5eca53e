"""The host-side proxy and the per-command lease, driven over their real Unix socket
by hand-written clients (no sandbox): the protocols, the asking, the bounds.

Every byte stays on loopback: the test hook maps names to a local echo server.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import struct
import subprocess
from collections.abc import AsyncIterator

import pytest

from loopd.policy.domains import DomainLists
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.sandbox.netgate import MAX_QUESTIONS, NetworkGate
from loopd.sandbox.proxy import MAX_CONNECTIONS
from loopd.sandbox.resolve import HookedNetwork, own_addresses

PUBLIC = "93.184.216.34"


class Asker:
    """Answers every question with `answer`, after `delay` seconds; counts them."""

    def __init__(self, answer: ApprovalDecision, delay: float = 0.0) -> None:
        self.answer, self.delay = answer, delay
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        await asyncio.sleep(self.delay)
        return self.answer


@pytest.fixture
async def echo() -> AsyncIterator[int]:
    """A loopback server that answers one line with `echo: <line>`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        writer.write(b"echo: " + line)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


def gate(port: int, ask: Asker, allowed: tuple[str, ...] = ("pypi.test",)) -> NetworkGate:
    hook = {
        "resolve": {"pypi.test": PUBLIC, "other.test": PUBLIC, "home.test": "10.0.0.7"},
        "dial": {f"{PUBLIC}:80": port, "10.0.0.7:80": port},
    }
    network = HookedNetwork.parse(json.dumps(hook))
    return NetworkGate(DomainLists.parse(allowed, ()), ask, "s1", network, frozenset())


async def connect_via(socket: str, host: str, port: int = 80) -> bytes:
    reader, writer = await asyncio.open_unix_connection(socket)
    writer.write(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    status = await reader.readline()
    if b" 200 " not in status:
        body = await reader.read()
        writer.close()
        return status + body
    await reader.readline()  # the blank line
    writer.write(b"ping\n")
    answer = await reader.read()
    writer.close()
    return answer


async def test_connect_reaches_a_listed_host_and_refuses_an_unlisted_one(echo: int) -> None:
    ask = Asker(ApprovalDecision.REJECT_ONCE)
    async with gate(echo, ask).lease("c1", "`curl`") as lease:
        assert await connect_via(lease.socket, "pypi.test") == b"echo: ping\n"
        refused = await connect_via(lease.socket, "other.test")
    assert b"403" in refused and b"other.test:80" in refused
    assert [r.line() for r in lease.requests] == [
        "pypi.test:80 allowed (pypi.test)",
        "other.test:80 refused (asked: rejected): not in allowed_domains, and the user rejected it",
    ]
    assert ask.asked[0].title == "Connect to other.test:80 (`curl`)"
    assert ask.asked[0].tool_call_id == "c1"


async def test_socks5_by_name_and_by_address(echo: int) -> None:
    async with gate(echo, Asker(ApprovalDecision.REJECT_ONCE)).lease("c1", "x") as lease:
        for kind, address in ((3, bytes([9]) + b"pypi.test"), (1, bytes([10, 0, 0, 7]))):
            reader, writer = await asyncio.open_unix_connection(lease.socket)
            writer.write(b"\x05\x01\x00")
            assert await reader.readexactly(2) == b"\x05\x00"
            writer.write(bytes((5, 1, 0, kind)) + address + struct.pack("!H", 80))
            reply = await reader.readexactly(10)
            if kind == 3:
                assert reply[1] == 0
                writer.write(b"ping\n")
                assert await reader.read() == b"echo: ping\n"
            else:
                assert reply[1] == 2  # 10.0.0.7, unlisted and private: refused
            writer.close()
    assert lease.requests[1].host == "10.0.0.7" and lease.requests[1].verdict == "refused"


@pytest.fixture
async def head() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A loopback server that keeps the request head it got, and answers nothing."""
    heads: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1], heads
    server.close()


async def test_plain_http_is_forwarded_to_the_judged_host_only(
    head: tuple[int, list[bytes]],
) -> None:
    """Origin form, `Connection: close`, no proxy credentials, and the `Host` the
    proxy judged: a client cannot front for another site on the same server."""
    port, heads = head
    async with gate(port, Asker(ApprovalDecision.REJECT_ONCE)).lease("c1", "x") as lease:
        reader, writer = await asyncio.open_unix_connection(lease.socket)
        writer.write(
            b"GET http://u:p@pypi.test/simple/?q=1 HTTP/1.1\r\nHost: attacker.example\r\n"
            b"Proxy-Authorization: secret\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n"
        )
        await reader.read()
    assert heads == [
        b"GET /simple/?q=1 HTTP/1.1\r\nHost: pypi.test\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    ]


async def test_one_question_per_host_however_many_connections_wait_for_it(echo: int) -> None:
    ask = Asker(ApprovalDecision.ALLOW_ONCE, delay=0.05)
    async with gate(echo, ask).lease("c1", "x") as lease:
        answers = await asyncio.gather(*(connect_via(lease.socket, "other.test") for _ in range(5)))
        assert answers == [b"echo: ping\n"] * 5
    assert len(ask.asked) == 1


async def test_once_lasts_the_command_and_always_the_session(echo: int) -> None:
    for answer, asked_twice in (
        (ApprovalDecision.ALLOW_ONCE, 2),
        (ApprovalDecision.ALLOW_ALWAYS, 1),
    ):
        ask = Asker(answer)
        session = gate(echo, ask)
        for call in ("c1", "c2"):
            async with session.lease(call, "x") as lease:
                assert await connect_via(lease.socket, "other.test") == b"echo: ping\n"
        assert len(ask.asked) == asked_twice


async def test_a_failing_approver_refuses(echo: int) -> None:
    async def broken(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("the editor went away")

    session = NetworkGate(
        DomainLists(), broken, "s1", gate(echo, Asker(ApprovalDecision.ALLOW_ONCE)).network
    )
    async with session.lease("c1", "x") as lease:
        assert b"403" in await connect_via(lease.socket, "other.test")


async def test_a_background_command_is_never_asked(echo: int) -> None:
    ask = Asker(ApprovalDecision.ALLOW_ALWAYS)
    session = gate(echo, ask)
    lease = await session.background_lease("c1", "x")
    assert b"403" in await connect_via(lease.socket, "other.test")
    assert await connect_via(lease.socket, "pypi.test") == b"echo: ping\n"
    assert ask.asked == []
    await session.aclose()


@pytest.mark.parametrize(
    "garbage",
    [b"", b"\x05", b"\x05\x01\x02", b"GET /relative HTTP/1.1\r\n\r\n", b"NONSENSE\r\n\r\n",
     b"CONNECT pypi.test HTTP/1.1\r\n\r\n", b"GET " + b"a" * 70000,
     b"\x05\x01\x00\x05\x02\x00\x01"],
)  # fmt: skip
async def test_garbage_gets_nothing_and_the_proxy_stays_up(echo: int, garbage: bytes) -> None:
    async with gate(echo, Asker(ApprovalDecision.ALLOW_ONCE)).lease("c1", "x") as lease:
        reader, writer = await asyncio.open_unix_connection(lease.socket)
        writer.write(garbage)
        writer.write_eof()
        answer = await reader.read()
        writer.close()
        assert b"echo" not in answer
        assert await connect_via(lease.socket, "pypi.test") == b"echo: ping\n"
    assert all(r.verdict == "refused" for r in lease.requests[:-1])


async def test_a_command_cannot_flood_the_person_with_questions(echo: int) -> None:
    ask = Asker(ApprovalDecision.REJECT_ONCE)
    async with gate(echo, ask).lease("c1", "x") as lease:
        for n in range(12):
            assert b"403" in await connect_via(lease.socket, f"host{n}.test")
    assert len(ask.asked) == MAX_QUESTIONS
    assert f"({MAX_QUESTIONS} hosts asked already)" in lease.requests[-1].reason


async def test_a_name_that_is_not_a_host_is_refused_unasked(echo: int) -> None:
    ask = Asker(ApprovalDecision.ALLOW_ONCE)
    async with gate(echo, ask).lease("c1", "x") as lease:
        assert b"403" in await connect_via(lease.socket, "pypi.test@evil.test")
        assert b"403" in await connect_via(lease.socket, "a\x1b[31m\x07b")
    assert ask.asked == [] and lease.requests[0].reason == "it is not a host name"
    assert lease.requests[1].host == "a?[31m?b"


async def test_connections_past_the_bound_are_closed_and_the_rest_still_work(echo: int) -> None:
    ask = Asker(ApprovalDecision.ALLOW_ONCE)
    async with gate(echo, ask).lease("c1", "x") as lease:
        held = [await asyncio.open_unix_connection(lease.socket) for _ in range(MAX_CONNECTIONS)]
        reader, _ = await asyncio.open_unix_connection(lease.socket)
        assert await reader.read() == b""  # closed at once
        for _, writer in held[:10]:
            writer.close()
        while lease.connections > MAX_CONNECTIONS - 10:  # noqa: ASYNC110 (the proxy sees them go)
            await asyncio.sleep(0)
        assert await connect_via(lease.socket, "pypi.test") == b"echo: ping\n"
    for _, writer in held[10:]:
        writer.close()


def test_this_machines_own_addresses_are_known() -> None:
    """Every address the kernel says is this machine's (`hostname -I` reads the same
    tables) is among those the lease refuses."""
    own = own_addresses()
    assert ipaddress.ip_address("127.0.0.1") in own
    listed = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False)
    for address in listed.stdout.split():
        assert ipaddress.ip_address(address) in own


@pytest.mark.parametrize(
    "spelling", ["localhost", "2130706433", "0x7f.1", "127.1", "[::1]", "[::ffff:127.0.0.1]"]
)
async def test_every_spelling_of_loopback_is_refused_even_when_star_is_allowed(
    spelling: str,
) -> None:
    """The machine's own resolver, on names it answers without asking the network."""
    session = NetworkGate(DomainLists.parse(["*"], ()), Asker(ApprovalDecision.ALLOW_ONCE), "s1")
    async with session.lease("c1", "x") as lease:
        assert b"403" in await connect_via(lease.socket, spelling)
    (request,) = lease.requests
    assert request.verdict == "refused" and "a loopback address" in request.reason


async def test_a_refused_name_is_never_resolved(echo: int) -> None:
    """No DNS query carries an unlisted name out (`secret.attacker.test` as a channel)."""
    session = gate(echo, Asker(ApprovalDecision.REJECT_ONCE))
    async with session.lease("c1", "x") as lease:
        await connect_via(lease.socket, "s3cret-data.other.test")
    assert isinstance(session.network, HookedNetwork)
    assert session.network.asked() == {}


def hooked(port: int, allowed: tuple[str, ...], resolve: dict[str, str]) -> NetworkGate:
    """A gate whose hook resolves `resolve` and dials every address at `port`."""
    dial = {f"{PUBLIC}:{p}": port for p in (80, 443)}
    network = HookedNetwork.parse(json.dumps({"resolve": resolve, "dial": dial}))
    return NetworkGate(DomainLists.parse(allowed, ()), Asker(ApprovalDecision.REJECT_ONCE), "s1",
                       network, frozenset())  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        ("::ffff:127.0.0.1", "a loopback address"),  # IPv4-mapped loopback
        ("::ffff:169.254.169.254", "a cloud metadata"),
        ("64:ff9b::a9fe:a9fe", "a cloud metadata"),  # NAT64 of the metadata address
        ("::1", "a loopback address"),
        (f"{PUBLIC}, ::ffff:127.0.0.1", "a loopback address"),  # one bad answer of two
    ],
)
async def test_a_listed_name_resolving_to_a_disguised_private_address_is_refused(
    echo: int, answer: str, kind: str
) -> None:
    """Not named in the issue: IPv6 spellings of loopback and metadata in a listed
    name's DNS answer, and a bad address beside a good one."""
    session = hooked(echo, ("*.test",), {"mapped.test": answer})
    async with session.lease("c1", "x") as lease:
        refused = await connect_via(lease.socket, "mapped.test")
    assert b"403" in refused and b"echo" not in refused
    (request,) = lease.requests
    assert request.verdict == "refused" and kind in request.reason


async def test_a_listed_host_on_another_port_is_not_listed(echo: int) -> None:
    """Not named in the issue: `pypi.test:443` lists one port; a CONNECT to port 80 of
    the same host is an unknown host (asked, here rejected), never dialled."""
    session = hooked(echo, ("pypi.test:443",), {"pypi.test": PUBLIC})
    async with session.lease("c1", "x") as lease:
        assert await connect_via(lease.socket, "pypi.test", 443) == b"echo: ping\n"
        refused = await connect_via(lease.socket, "pypi.test", 80)
    assert b"403" in refused and b"pypi.test:80" in refused
    assert [r.line() for r in lease.requests] == [
        "pypi.test:443 allowed (pypi.test:443)",
        "pypi.test:80 refused (asked: rejected): not in allowed_domains, and the user rejected it",
    ]
