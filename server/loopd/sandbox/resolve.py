"""Name resolution and dialling for the network proxy, and the test hook that replaces
both.

The proxy resolves a name once, checks every address it got, and dials one of those
checked addresses: never the name again, so an answer that changes between the check
and the connection (DNS rebinding) reaches nothing it did not check.

`LOOPD_TEST_NETWORK` is a TEST HOOK, honoured only here (the proxy's resolver and
dialler) and by nothing else in loopd. It is JSON:

    {"resolve": {"pypi.test": "93.184.216.34",              # every answer
                 "rebind.test": ["93.184.216.34", "127.0.0.1"]},  # answers in turn
     "dial": {"93.184.216.34:80": 41234}}                     # -> 127.0.0.1:41234

With it set, names resolve only through the map and connections go only to the
mapped loopback ports; anything else fails. So a test can make a name look public
(or private) to the checks while every byte stays on loopback, and a mistake in a
test can never reach another address.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from loopd.policy.domains import IPAddress

TEST_HOOK = "LOOPD_TEST_NETWORK"
DIAL_TIMEOUT = 30.0


class Network(Protocol):
    async def resolve(self, host: str, port: int) -> tuple[IPAddress, ...]: ...

    async def dial(
        self, address: IPAddress, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]: ...


class SystemNetwork:
    """The machine's resolver and TCP."""

    async def resolve(self, host: str, port: int) -> tuple[IPAddress, ...]:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        found = (ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos)
        return tuple(dict.fromkeys(found))

    async def dial(
        self, address: IPAddress, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.wait_for(asyncio.open_connection(str(address), port), DIAL_TIMEOUT)


@dataclass(slots=True)
class HookedNetwork:
    """The test hook (see the module doc)."""

    answers: dict[str, list[tuple[IPAddress, ...]]]
    ports: Mapping[str, int]
    _asked: dict[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> HookedNetwork:
        data: dict[str, Any] = json.loads(text)
        answers: dict[str, list[tuple[IPAddress, ...]]] = {}
        for name, value in data.get("resolve", {}).items():
            turns = value if isinstance(value, list) else [value]
            answers[name.lower()] = [_addresses(turn) for turn in turns]
        return cls(answers, {k: int(v) for k, v in data.get("dial", {}).items()})

    def asked(self) -> dict[str, int]:
        """How many times each name was resolved."""
        return dict(self._asked)

    async def resolve(self, host: str, port: int) -> tuple[IPAddress, ...]:
        self._asked[host] = self._asked.get(host, 0) + 1
        turns = self.answers.get(host)
        if not turns:
            raise socket.gaierror(socket.EAI_NONAME, f"{host}: not in {TEST_HOOK}")
        return turns[min(self._asked[host] - 1, len(turns) - 1)]

    async def dial(
        self, address: IPAddress, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        shown = f"[{address}]" if address.version == 6 else str(address)
        local = self.ports.get(f"{shown}:{port}")
        if local is None:
            raise ConnectionRefusedError(f"{shown}:{port} is not mapped in {TEST_HOOK}")
        return await asyncio.open_connection("127.0.0.1", local)


def _addresses(text: str) -> tuple[IPAddress, ...]:
    return tuple(ipaddress.ip_address(a.strip()) for a in text.split(","))


def network_for(env: Mapping[str, str]) -> Network:
    """The system's network, or the test hook's when `LOOPD_TEST_NETWORK` is set."""
    hook = env.get(TEST_HOOK)
    return HookedNetwork.parse(hook) if hook else SystemNetwork()


def own_addresses() -> frozenset[IPAddress]:
    """This machine's own addresses, from the kernel's tables (Linux `/proc/net`):
    the local routes of `fib_trie` for IPv4, `if_inet6` for IPv6. Private ones are
    refused anyway; this catches a public address the machine itself holds."""
    found: set[IPAddress] = set()
    with contextlib.suppress(OSError), open("/proc/net/fib_trie", encoding="ascii") as trie:
        last = ""
        for line in trie:
            words = line.split()
            if words[:1] == ["|--"] and len(words) > 1:
                last = words[1]
            elif "/32 host LOCAL" in line and last:
                with contextlib.suppress(ValueError):
                    found.add(ipaddress.ip_address(last))
    with contextlib.suppress(OSError), open("/proc/net/if_inet6", encoding="ascii") as inet6:
        for line in inet6:
            raw = line.split()[0] if line.strip() else ""
            with contextlib.suppress(ValueError):
                found.add(ipaddress.IPv6Address(int(raw, 16)))
    return frozenset(found)
