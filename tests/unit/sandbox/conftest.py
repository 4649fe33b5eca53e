"""Real sandbox runs: each tier is forced with `probe_sandbox(which=[tier])` and skipped
only when this machine lacks its mechanism (CI installs bubblewrap)."""

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from loopd.policy.modes import Mode
from loopd.policy.network import NetworkGrant
from loopd.sandbox.base import CommandSandbox, CommandSpec, PreparedCommand
from loopd.sandbox.probe import SandboxProbe, probe_sandbox, select_sandbox
from loopd.sandbox.tiers import Tier

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
        return self.sandbox.prepare(CommandSpec(("sh", "-c", script), str(self.ws), (str(self.ws),)))

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


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".env").write_text("API_TOKEN=hunter2\n")
    (ws / "src").mkdir()
    return ws.resolve()


@pytest.fixture
def outside() -> Iterator[Path]:
    """A host folder outside the roots and outside /tmp (which Landlock leaves writable)."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="loopd-outside-", dir=base)).resolve()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def make_box(tier: Tier, ws: Path, mode: Mode = Mode.ASK) -> Box:
    probe = forced_probe(tier)
    grant = NetworkGrant()
    env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEY, "OPENAI_API_KEY": FAKE_KEY}
    home = ws.parent / "home"
    sandbox = select_sandbox(mode, probe, [str(ws)], grant, env, home=str(home))
    assert sandbox.tier == tier
    return Box(tier, ws, grant, sandbox)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on loopback, outside any sandbox."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]
