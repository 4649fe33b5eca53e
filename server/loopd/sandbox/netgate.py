"""Network by domain for one session: who decides each connection a command makes
through the proxy, and what is kept of it.

Every command gets a `Lease`: its own proxy socket (`loopd.sandbox.proxy`) in a
private folder, bound into its sandbox, and the list of what it asked for. One
socket per command means each connection is attributed to the call that made it,
so its host, port, verdict and rule go into that call's result (which the session
journals). For each connection the lease:

1. judges the host by the lists (`loopd.policy.domains`: deny wins, then allow);
2. asks the person about an unknown host, through the session's approver: "allow
   once" lets this command reach it, "always" the rest of the session, "reject" and
   "never" likewise refuse it; a background command is never asked (nobody is
   watching it): unknown is refused, and so is a ninth unknown host in one command
   (a command must not flood the person with questions);
3. resolves the name once, refuses it if any address is not public (unless the host
   is an IP literal listed in `allowed_domains`), and dials a checked address.

Any failure on the way (no answer, a failing approver, an unresolvable name) is a
refusal with its reason: the command sees a 403 naming the host and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from loopd.policy.domains import (
    DomainLists,
    IPAddress,
    NetVerdict,
    address_refusal,
    is_host_name,
    literal_address,
    normalize_host,
)
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.sandbox.proxy import ProxyServer, Refused, Streams, serve
from loopd.sandbox.resolve import Network, SystemNetwork, own_addresses

log = logging.getLogger(__name__)

Ask = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]
Key = tuple[str, int]
MAX_QUESTIONS = 8  # unknown hosts put to the person per command; more are refused


@dataclass(frozen=True, slots=True)
class NetRequest:
    """One connection a command asked for, as its result reports it."""

    host: str
    port: int
    verdict: Literal["allowed", "refused"]
    rule: str  # the list entry, "asked: <answer>", or "" (refused before any rule)
    reason: str

    def line(self) -> str:
        rule = f" ({self.rule})" if self.rule else ""
        why = "" if self.verdict == "allowed" else f": {self.reason}"
        return f"{self.host}:{self.port} {self.verdict}{rule}{why}"

    def to_json(self) -> dict[str, object]:
        return {
            "host": self.host,
            "port": self.port,
            "verdict": self.verdict,
            "rule": self.rule,
            "reason": self.reason,
        }


@dataclass(eq=False)
class NetworkGate:
    """A session's lists, its "always" answers, and where leases ask."""

    lists: DomainLists
    ask: Ask
    session_id: str
    network: Network = field(default_factory=SystemNetwork)
    own: frozenset[IPAddress] = field(default_factory=own_addresses)
    remembered: dict[Key, bool] = field(default_factory=dict)
    _stack: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)

    @contextlib.asynccontextmanager
    async def lease(self, call_id: str, title: str) -> AsyncIterator[Lease]:
        """A proxy socket for one foreground command, closed when it ends."""
        lease = Lease(self, call_id, title, asks=True)
        await lease.start()
        try:
            yield lease
        finally:
            await lease.close()

    async def background_lease(self, call_id: str, title: str) -> Lease:
        """A proxy socket for a background command, open until the session closes."""
        lease = Lease(self, call_id, title, asks=False)
        await lease.start()
        self._stack.push_async_callback(lease.close)
        return lease

    async def aclose(self) -> None:
        await self._stack.aclose()


@dataclass(eq=False)
class Lease:
    gate: NetworkGate
    call_id: str
    title: str
    asks: bool
    requests: list[NetRequest] = field(default_factory=list)
    answers: dict[Key, bool] = field(default_factory=dict)  # "once" answers, this command
    _pending: dict[Key, asyncio.Future[bool]] = field(default_factory=dict)
    _folder: str = ""
    _server: ProxyServer | None = None

    @property
    def socket(self) -> str:
        return os.path.join(self._folder, "proxy.sock")

    @property
    def connections(self) -> int:
        """Connections open right now."""
        return len(self._server.open_writers) if self._server is not None else 0

    async def start(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="loopd-net-")  # 0700: ours alone
        self._server = await serve(self.socket, self)

    async def close(self) -> None:
        """Stop listening, end open connections, withdraw open questions."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for pending in self._pending.values():
            pending.cancel()
        shutil.rmtree(self._folder, ignore_errors=True)

    async def open(self, host: str, port: int) -> Streams | Refused:
        host = normalize_host(host)
        if literal_address(host) is None and not is_host_name(host):
            shown = re.sub(r"[^\x21-\x7e]", "?", host[:80])  # printable, whatever it held
            return self._refuse(shown, port, "", "it is not a host name")
        allowed, rule, reason = await self._judge(host, port)
        if not allowed:
            return self._refuse(host, port, rule, reason)
        try:
            address = await self._address(host, port)
        except (OSError, UnicodeError) as err:
            return self._refuse(host, port, rule, f"it did not resolve ({err})")
        if isinstance(address, Refused):
            return self._refuse(host, port, rule, address.reason)
        try:
            streams = await self.gate.network.dial(address, port)
        except (OSError, TimeoutError) as err:
            return self._refuse(host, port, rule, f"connecting to {address} failed ({err})")
        self._record(NetRequest(host, port, "allowed", rule, f"via {address}"))
        return streams

    async def _judge(self, host: str, port: int) -> tuple[bool, str, str]:
        judgement = self.gate.lists.judge(host, port)
        match judgement.verdict:
            case NetVerdict.ALLOWED:
                return True, judgement.rule, judgement.reason
            case NetVerdict.REFUSED:
                return False, judgement.rule, judgement.reason
            case NetVerdict.UNKNOWN:
                return await self._unknown(host, port)

    async def _unknown(self, host: str, port: int) -> tuple[bool, str, str]:
        key = (host, port)
        for memory, rule in ((self.gate.remembered, "always"), (self.answers, "once")):
            if key in memory:
                word = "allowed" if memory[key] else "refused"
                return memory[key], f"{word} {rule} by the user", "the user refused it"
        if not self.asks:
            return False, "", "not in allowed_domains (a background command is not asked)"
        pending = self._pending.get(key)
        if pending is None and len(self._pending) >= MAX_QUESTIONS:
            return False, "", f"not in allowed_domains ({MAX_QUESTIONS} hosts asked already)"
        if pending is None:
            pending = self._pending[key] = asyncio.ensure_future(self._put(host, port))
        allowed = await asyncio.shield(pending)
        word = "allowed" if allowed else "rejected"
        return allowed, f"asked: {word}", f"not in allowed_domains, and the user {word} it"

    async def _put(self, host: str, port: int) -> bool:
        request = ApprovalRequest(
            session_id=self.gate.session_id,
            tool_call_id=self.call_id,
            tool_name="network",
            title=f"Connect to {host}:{port} ({self.title})",
            kind="fetch",
            raw_input={"host": host, "port": port},
            reason=f"{host} is not in [sandbox] allowed_domains",
        )
        try:
            answer = await self.gate.ask(request)
        except Exception:  # an approver that fails refuses: fail closed
            log.exception("network approval failed; refusing %s:%d", host, port)
            answer = ApprovalDecision.REJECT_ONCE
        allowed = answer.allowed
        (self.gate.remembered if answer.remembered else self.answers)[(host, port)] = allowed
        return allowed

    async def _address(self, host: str, port: int) -> IPAddress | Refused:
        literal = literal_address(host)
        if literal is not None:
            if self.gate.lists.names_literal(literal, port):
                return literal
            refusal = address_refusal(literal, self.gate.own)
            return Refused(f"{refusal} not listed in allowed_domains") if refusal else literal
        addresses = await self.gate.network.resolve(host, port)
        if not addresses:
            return Refused("it resolved to no address")
        for address in addresses:  # every one is checked: any of them could be dialled
            refusal = address_refusal(address, self.gate.own)
            if refusal is not None:
                return Refused(f"it resolves to {refusal}")
        return addresses[0]

    def _refuse(self, host: str, port: int, rule: str, reason: str) -> Refused:
        self._record(NetRequest(host, port, "refused", rule, reason))
        return Refused(f"{host}:{port}: {reason}")

    def _record(self, request: NetRequest) -> None:
        """Kept for the call's result; logged too, for a background command's, which
        has no result to end."""
        self.requests.append(request)
        log.info("network, call %s: %s", self.call_id, request.line())

    def report(self) -> str:
        """What the command's result says about its network, "" when it used none."""
        if not self.requests:
            return ""
        counted: dict[str, int] = {}
        for request in self.requests:
            counted[request.line()] = counted.get(request.line(), 0) + 1
        lines = (f"  {line}" + (f" (x{n})" if n > 1 else "") for line, n in counted.items())
        return "Network (by domain, through loopd's proxy):\n" + "\n".join(lines)
