"""The domain lists and the address checks of network by domain (pure)."""

from __future__ import annotations

import ipaddress

import pytest

from loopd.policy.domains import (
    DomainLists,
    DomainRule,
    NetVerdict,
    address_refusal,
    parse_rule,
)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("pypi.org", DomainRule("pypi.org")),
        ("PyPI.org.", DomainRule("pypi.org")),
        ("*.pythonhosted.org", DomainRule("*.pythonhosted.org")),
        ("registry.npmjs.org:443", DomainRule("registry.npmjs.org", 443)),
        ("*", DomainRule("*")),
        ("10.0.0.5:8080", DomainRule("10.0.0.5", 8080)),
        ("[FD00::1]:8080", DomainRule("fd00::1", 8080)),
        ("fd00::1", DomainRule("fd00::1")),
    ],
)
def test_rules_parse(text: str, rule: DomainRule) -> None:
    assert parse_rule(text) == rule


@pytest.mark.parametrize(
    "text", ["", "a b", "*pypi.org", "pypi.*", "**.x", "x:0", "x:65536", "x:http", "[::1", "a..b"]
)
def test_bad_rules_are_refused_with_a_reason(text: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        parse_rule(text)


def test_deny_wins_over_allow_and_an_unlisted_host_is_unknown() -> None:
    lists = DomainLists.parse(["*.pypi.org", "pypi.org"], ["evil.pypi.org"])
    assert lists.judge("files.pypi.org", 443).verdict is NetVerdict.ALLOWED
    assert lists.judge("pypi.org", 443).rule == "pypi.org"
    denied = lists.judge("evil.pypi.org", 443)
    assert (denied.verdict, denied.rule) == (NetVerdict.REFUSED, "evil.pypi.org")
    assert lists.judge("evilpypi.org", 443).verdict is NetVerdict.UNKNOWN


def test_a_wildcard_names_subdomains_only_and_a_port_narrows_it() -> None:
    lists = DomainLists.parse(["*.example.com:443"], [])
    assert lists.judge("a.b.example.com", 443).verdict is NetVerdict.ALLOWED
    assert lists.judge("example.com", 443).verdict is NetVerdict.UNKNOWN
    assert lists.judge("a.example.com", 22).verdict is NetVerdict.UNKNOWN


def test_an_empty_allowlist_allows_nothing_and_star_allows_names_not_addresses() -> None:
    assert DomainLists.parse([], []).judge("pypi.org", 443).verdict is NetVerdict.UNKNOWN
    star = DomainLists.parse(["*"], [])
    assert star.judge("pypi.org", 443).verdict is NetVerdict.ALLOWED
    assert star.judge("10.0.0.1", 443).verdict is NetVerdict.UNKNOWN


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.1", "private"),
        ("fd00::5", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "not a public"),  # carrier-grade NAT
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("2002:a9fe:a9fe::", "cloud metadata"),  # 6to4 of 169.254.169.254
    ],
)
def test_non_public_addresses_are_refused_in_every_spelling(address: str, kind: str) -> None:
    refusal = address_refusal(ipaddress.ip_address(address))
    assert refusal is not None and kind in refusal


def test_a_public_address_passes_unless_it_is_this_machines_own() -> None:
    public = ipaddress.ip_address("93.184.216.34")
    assert address_refusal(public) is None
    assert "this machine's own" in (address_refusal(public, {public}) or "")


def test_only_an_allowed_ip_literal_is_named_exactly() -> None:
    lists = DomainLists.parse(["10.0.0.5:8080", "*"], [])
    assert lists.names_literal(ipaddress.ip_address("10.0.0.5"), 8080)
    assert not lists.names_literal(ipaddress.ip_address("10.0.0.5"), 80)
    assert not lists.names_literal(ipaddress.ip_address("10.0.0.6"), 8080)
