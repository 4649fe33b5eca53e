"""What `loopd doctor` says of a command's network, tier by tier, is what the tier
table says and `tests/unit/sandbox/test_safety_by_tier.py` measures: it said "no
network unless it is granted whole" in the landlock tier (UDP open) and the none
tier (the network on)."""

from __future__ import annotations

import dataclasses

import pytest

from loopd.cli.doctor import network
from loopd.config import Config
from loopd.policy.tiers import Tier

SAID = {
    Tier.BWRAP_LANDLOCK: "commands have no network unless it is granted whole",
    Tier.BWRAP: "commands have no network unless it is granted whole",
    Tier.NETNS: "commands have no network unless it is granted whole",
    Tier.LANDLOCK: "no TCP unless the network is granted whole (from Landlock ABI 4), UDP",
    Tier.NONE: "commands always have the network",
}


@pytest.mark.parametrize("tier", list(Tier))
def test_doctor_says_the_tier_s_network_with_and_without_lists(tier: Tier) -> None:
    plain = Config()
    listed = dataclasses.replace(
        plain, sandbox=dataclasses.replace(plain.sandbox, allowed_domains=("pypi.org",))
    )
    assert SAID[tier] in network(plain, tier)
    if tier.binds_proxy:
        assert "loopd's proxy is commands' only way out" in network(listed, tier)
    else:
        assert f"NOT enforced in the {tier} tier" in network(listed, tier)
        assert SAID[tier] in network(listed, tier)
