"""Network by domain: which hosts a sandboxed command may reach through loopd's proxy,
and which resolved addresses are refused whatever the lists say.

Pure (no I/O), so the config parser, the proxy and `loopd doctor` share one reading:

- a rule is `host`, `*.host` (any name below `host`, not `host` itself), `*` (any
  name), or an IP literal (`10.0.0.5`, `[fd00::1]`), each with an optional `:port`
  (no port: any port);
- `denied_domains` wins over `allowed_domains`; a host on neither list is unknown
  (the person is asked, or it is refused); an empty allowlist allows nothing;
- whatever a name's rule, the address it resolves to must be public: loopback,
  private, link-local, multicast, cloud metadata, reserved and this machine's own
  addresses are refused, and so are the IPv6 forms that carry one of them inside
  (IPv4-mapped, NAT64, 6to4, Teredo). Only an IP literal listed in
  `allowed_domains` reaches such an address, because the person named it exactly.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


class NetVerdict(StrEnum):
    ALLOWED = "allowed"
    REFUSED = "refused"
    UNKNOWN = "unknown"  # on neither list: ask the person, or refuse


@dataclass(frozen=True, slots=True)
class DomainRule:
    """One list entry. `host` is lower-case without a trailing dot; `*.x` and `*` are
    wildcards; an IP literal is kept in its compressed form (`literal`)."""

    host: str
    port: int | None = None

    @property
    def literal(self) -> IPAddress | None:
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host == "*":
            return literal_address(host) is None  # a wildcard names names, not addresses
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host

    def __str__(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return shown if self.port is None else f"{shown}:{self.port}"


def parse_rule(text: str) -> DomainRule:
    """A rule from its config spelling; ValueError names what is wrong."""
    host, port = split_host_port(text.strip(), None)
    if host.startswith("*.") or host == "*":
        rest = host[2:]
        if host != "*" and not is_host_name(rest):
            raise ValueError(f"{text!r}: a wildcard is `*.` before a domain name")
        return DomainRule(host, port)
    if literal_address(host) is None and not is_host_name(host):
        raise ValueError(f"{text!r} is not a host name, `*.domain` or an IP address")
    return DomainRule(normalize_host(host), port)


def split_host_port(text: str, default: int | None) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 literal."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"{text!r}: unclosed `[`")
        host, rest = text[1:end], text[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"{text!r}: text after `]`")
        return host, _port(rest[1:], text) if rest else default
    if text.count(":") == 1:
        host, port = text.split(":")
        return host, _port(port, text)
    return text, default


def _port(text: str, whole: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{whole!r}: the port must be a number from 1 to 65535")
    return int(text)


def normalize_host(host: str) -> str:
    """Lower case, no trailing dot, an IP literal in its compressed form."""
    address = literal_address(host)
    return str(address) if address is not None else host.lower().rstrip(".")


def literal_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def is_host_name(host: str) -> bool:
    """Dot-separated labels of letters, digits, `-` and `_`, at most 253 long."""
    labels = host.lower().rstrip(".").split(".")
    return len(host) <= 253 and all(_LABEL.match(label) for label in labels)


@dataclass(frozen=True, slots=True)
class Judgement:
    verdict: NetVerdict
    rule: str  # the rule that decided, as written; "" when none did
    reason: str


@dataclass(frozen=True, slots=True)
class DomainLists:
    """`[sandbox] allowed_domains` / `denied_domains`, parsed."""

    allowed: tuple[DomainRule, ...] = ()
    denied: tuple[DomainRule, ...] = ()

    @classmethod
    def parse(cls, allowed: Iterable[str], denied: Iterable[str]) -> DomainLists:
        return cls(tuple(map(parse_rule, allowed)), tuple(map(parse_rule, denied)))

    def judge(self, host: str, port: int) -> Judgement:
        """Deny wins, then allow; anything else is unknown."""
        for rule in self.denied:
            if rule.matches(host, port):
                return Judgement(NetVerdict.REFUSED, str(rule), "listed in denied_domains")
        for rule in self.allowed:
            if rule.matches(host, port):
                return Judgement(NetVerdict.ALLOWED, str(rule), "listed in allowed_domains")
        return Judgement(NetVerdict.UNKNOWN, "", "not in allowed_domains")

    def names_literal(self, address: IPAddress, port: int) -> bool:
        """Whether `allowed_domains` lists this IP literal (the one way to reach a
        non-public address)."""
        return any(r.literal == address and r.port in (None, port) for r in self.allowed)


def address_refusal(address: IPAddress, own: Collection[IPAddress] = ()) -> str | None:
    """Why a command may not reach `address` ("127.0.0.1, a loopback address"), or
    None when it is public."""
    for inner in reversed(_carried(address)):  # what it carries says the most
        if inner in METADATA:
            return f"{address}, a cloud metadata address"
        for kind in ("unspecified", "loopback", "link_local", "multicast", "private", "reserved"):
            if getattr(inner, f"is_{kind}"):
                return f"{address}, a {kind.replace('_', '-')} address"
        if inner in own:
            return f"{address}, this machine's own address"
        if not inner.is_global:
            return f"{address}, not a public address"
    return None


def _carried(address: IPAddress) -> tuple[IPAddress, ...]:
    """The address and every IPv4 address an IPv6 form carries inside it."""
    if not isinstance(address, ipaddress.IPv6Address):
        return (address,)
    inner: list[IPAddress] = [address]
    if address.ipv4_mapped is not None:
        inner.append(address.ipv4_mapped)
    if address in _NAT64:
        inner.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.sixtofour is not None:
        inner.append(address.sixtofour)
    if address.teredo is not None:
        inner.extend(address.teredo)
    return tuple(inner)
