"""What the README's "Log in" and tier table say about loopd's own folder, checked
tier by tier: only the bubblewrap tiers hide `login.json` from a command; in the
landlock, netns and none tiers a command reads it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from sandbox_boxes import forced_probe

from loopd.policy.modes import Mode
from loopd.policy.network import NetworkGrant
from loopd.policy.tiers import Tier
from loopd.sandbox.base import CommandSandbox, CommandSpec, Unsandboxed
from loopd.sandbox.probe import select_sandbox

KEY = "sk-ant-stored-by-loopd-login"


def sandbox_for(tier: Tier, ws: Path, data: Path) -> CommandSandbox:
    if tier is Tier.NONE:
        return Unsandboxed(dict(os.environ))
    home = str(ws.parent / "home")
    return select_sandbox(
        Mode.ASK, forced_probe(tier), [str(ws)], NetworkGrant(), dict(os.environ),
        home=home, extra_secrets=(str(data),),
    )  # fmt: skip


@pytest.mark.parametrize("tier", list(Tier))
def test_only_the_bubblewrap_tiers_hide_the_login(tier: Tier, workspace: Path) -> None:
    data = workspace.parent / "loopd-data"
    data.mkdir()
    (data / "login.json").write_text(KEY)
    sandbox = sandbox_for(tier, workspace, data)
    prepared = sandbox.prepare(
        CommandSpec(("cat", str(data / "login.json")), str(workspace), (str(workspace),))
    )
    done = subprocess.run(
        prepared.argv, env=dict(prepared.env), cwd=prepared.cwd, preexec_fn=prepared.preexec,
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert (KEY in done.stdout) is not tier.masks_secrets


def test_the_log_in_section_names_every_tier_whose_commands_read_the_login() -> None:
    """The instance: the README said commands "cannot see that folder" in every tier.
    What it says now is the measurement above, tier by tier."""
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    section = " ".join(readme.split("## Log in", 1)[1].split("\n## ", 1)[0].split())
    assert "Only in the bubblewrap tiers do commands the agent runs not see that folder" in section
    readable = [tier for tier in Tier if not tier.masks_secrets]
    assert readable == [Tier.LANDLOCK, Tier.NETNS, Tier.NONE]
    assert "In the `landlock`, `netns` and `none` tiers they can read it" in section
    assert "cannot see that folder" not in section
