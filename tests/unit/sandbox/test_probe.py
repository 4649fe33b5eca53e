import os
from pathlib import Path

import pytest
from sandbox_boxes import forced_probe, make_box

from loopd.policy.modes import Mode, SandboxMode
from loopd.policy.network import NetworkGrant
from loopd.policy.tiers import Tier
from loopd.sandbox.base import CommandSpec, Unsandboxed
from loopd.sandbox.bwrap import BwrapSandbox
from loopd.sandbox.landlock import LandlockSandbox
from loopd.sandbox.netns import NetnsSandbox
from loopd.sandbox.probe import SandboxProbe, TierReport, probe_sandbox, select_sandbox


def test_nothing_probed_means_the_none_tier() -> None:
    probe = probe_sandbox(which=[])
    assert probe.best is Tier.NONE
    assert probe.report().splitlines()[0] == "sandbox: none"


def test_a_missing_bwrap_is_reported_with_the_package_to_install() -> None:
    probe = probe_sandbox(which=[Tier.BWRAP], bwrap="/nonexistent/bwrap")
    assert probe.best is Tier.NONE
    assert not probe.available(Tier.BWRAP)
    assert "/nonexistent/bwrap" in probe.report() or "bwrap" in probe.report()


def test_best_is_the_strongest_available_tier() -> None:
    reports = (
        TierReport(Tier.BWRAP_LANDLOCK, False, "x"),
        TierReport(Tier.BWRAP, False, "x"),
        TierReport(Tier.LANDLOCK, True, "ABI 7"),
        TierReport(Tier.NETNS, True, "ok"),
    )
    probe = SandboxProbe(reports)
    assert probe.best is Tier.LANDLOCK
    lines = probe.report().splitlines()
    assert lines[0] == "sandbox: landlock"
    assert any(line.split()[:2] == ["bwrap", "unavailable:"] for line in lines)


def _probe(tier: Tier) -> SandboxProbe:
    return SandboxProbe((TierReport(tier, True, ""),), bwrap_path="/usr/bin/bwrap")


@pytest.mark.parametrize(
    ("mode", "tier", "kind"),
    [
        (Mode.ASK, Tier.BWRAP, BwrapSandbox),
        (Mode.ASK, Tier.BWRAP_LANDLOCK, BwrapSandbox),
        (Mode.ASK, Tier.LANDLOCK, LandlockSandbox),
        (Mode.ASK, Tier.NETNS, NetnsSandbox),
        (Mode.ASK, Tier.NONE, Unsandboxed),
        (SandboxMode.FULL_ACCESS, Tier.BWRAP, Unsandboxed),
    ],
)
def test_selection_follows_the_probe_and_the_mode(
    tmp_path: Path, mode: Mode | SandboxMode, tier: Tier, kind: type
) -> None:
    sandbox = select_sandbox(mode, _probe(tier), [str(tmp_path)], NetworkGrant(), {})
    assert isinstance(sandbox, kind)
    if kind is not Unsandboxed:
        assert sandbox.tier == tier


def test_plan_mode_selects_read_only_roots(tmp_path: Path) -> None:
    sandbox = select_sandbox(
        Mode.READ_ONLY, _probe(Tier.BWRAP), [str(tmp_path)], NetworkGrant(), {}
    )
    assert isinstance(sandbox, BwrapSandbox) and sandbox.read_only
    prepared = sandbox.prepare(CommandSpec(("true",), str(tmp_path), (str(tmp_path),)))
    assert "--bind" not in prepared.argv
    assert ("--ro-bind", str(tmp_path), str(tmp_path)) in zip(
        prepared.argv, prepared.argv[1:], prepared.argv[2:], strict=False
    )


def test_the_network_grant_is_read_at_every_prepare(tmp_path: Path) -> None:
    grant = NetworkGrant()
    sandbox = select_sandbox(Mode.ASK, _probe(Tier.BWRAP), [str(tmp_path)], grant, {})
    spec = CommandSpec(("true",), str(tmp_path))
    assert "--unshare-net" in sandbox.prepare(spec).argv
    grant.grant()
    assert "--unshare-net" not in sandbox.prepare(spec).argv
    grant.revoke()
    approved_once = CommandSpec(("true",), str(tmp_path), network=True)
    assert "--unshare-net" not in sandbox.prepare(approved_once).argv


@pytest.mark.parametrize(
    "tier", [Tier.BWRAP, Tier.BWRAP_LANDLOCK, Tier.LANDLOCK, Tier.NETNS, Tier.NONE]
)
def test_environments_are_built_from_scratch(tmp_path: Path, tier: Tier) -> None:
    env = {
        "PATH": "/bin",
        "HOME": "/h",
        "ANTHROPIC_API_KEY": "k",
        "GITHUB_TOKEN": "t",
        "LD_PRELOAD": "x",
    }
    sandbox = select_sandbox(Mode.ASK, _probe(tier), [str(tmp_path)], NetworkGrant(), env)
    prepared = sandbox.prepare(CommandSpec(("true",), str(tmp_path)))
    assert set(prepared.env) <= {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "TMPDIR"}
    assert prepared.env["PATH"] == "/bin"


def test_landlock_really_runs_inside_bwrap_when_stacked(workspace: Path) -> None:
    """bwrap's /dev/shm is writable; the stacked Landlock layer allows only /dev/null."""
    forced_probe(Tier.BWRAP)
    plain = make_box(Tier.BWRAP, workspace).run("touch /dev/shm/x && echo wrote")
    stacked = make_box(Tier.BWRAP_LANDLOCK, workspace).run("touch /dev/shm/x && echo wrote")
    assert plain.stdout == "wrote\n"
    assert stacked.stdout == ""
    assert "Permission denied" in stacked.stderr


def test_probe_runs_each_tier_for_real() -> None:
    probe = probe_sandbox(env=dict(os.environ))
    for report in probe.reports:
        assert report.detail
    assert probe.available(Tier.NONE)
