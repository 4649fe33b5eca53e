"""Running shell lines through a forced sandbox tier. A tier is skipped only when this
machine lacks its mechanism (CI installs bubblewrap)."""

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from loopd.policy.modes import Mode
from loopd.policy.network import NetworkGrant
from loopd.policy.tiers import Tier
from loopd.sandbox.base import CommandSandbox, CommandSpec, PreparedCommand
from loopd.sandbox.probe import SandboxProbe, probe_sandbox, select_sandbox

FAKE_KEY = "sk-ant-test-must-not-leak"
_probes: dict[Tier, SandboxProbe] = {}


def forced_probe(tier: Tier) -> SandboxProbe:
    if tier not in _probes:
        _probes[tier] = probe_sandbox(which=[tier])
    probe = _probes[tier]
    if probe.best is not tier:
        detail = next(r.detail for r in probe.reports if r.tier is tier)
        pytest.skip(f"sandbox tier {tier} is unavailable here: {detail}")
    return probe


@dataclass
class Box:
    """A sandbox for one workspace, plus a way to run a shell line through it."""

    tier: Tier
    ws: Path
    grant: NetworkGrant
    sandbox: CommandSandbox

    def prepare(self, script: str) -> PreparedCommand:
        return self.sandbox.prepare(
            CommandSpec(("sh", "-c", script), str(self.ws), (str(self.ws),))
        )

    def run(self, script: str) -> subprocess.CompletedProcess[str]:
        prepared = self.prepare(script)
        return subprocess.run(
            prepared.argv,
            env=dict(prepared.env),
            cwd=prepared.cwd,
            preexec_fn=prepared.preexec,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )


def make_box(tier: Tier, ws: Path, mode: Mode = Mode.ASK) -> Box:
    probe = forced_probe(tier)
    grant = NetworkGrant()
    env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEY, "OPENAI_API_KEY": FAKE_KEY}
    home = ws.parent / "home"
    sandbox = select_sandbox(mode, probe, [str(ws)], grant, env, home=str(home))
    assert sandbox.tier == tier
    return Box(tier, ws, grant, sandbox)
