"""`loopd doctor` as a person runs it: version, data dir, the catalog found from the
environment and config, and the sandbox tiers probed for real."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loopd import __version__
from loopd.sandbox.tiers import Tier

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]


def doctor(tmp_path: Path, **extra: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "LOOPD_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT / "server"),
        **extra,
    }
    done = subprocess.run(
        [sys.executable, "-m", "loopd", "doctor"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_doctor_reports_version_data_catalog_and_every_tier(tmp_path: Path) -> None:
    out = doctor(tmp_path, ANTHROPIC_API_KEY="x", ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    lines = out.splitlines()
    assert lines[0].startswith(f"loopd {__version__} (Python ")
    assert lines[1] == f"data: {tmp_path / 'data'}"
    assert "anthropic" in out
    chosen = re.search(r"^sandbox: (\S+)$", out, re.M)
    assert chosen is not None
    tiers = dict(re.findall(r"^  (\S+)\s+(ok|unavailable): ", out, re.M))
    assert set(tiers) == {t.value for t in Tier}
    assert tiers["none"] == "ok"
    best = next(t.value for t in Tier if tiers[t.value] == "ok")
    assert chosen.group(1) == best  # the tier used is the best one that worked
    assert "sk-" not in out


def test_doctor_without_any_provider_still_reports_the_sandbox(tmp_path: Path) -> None:
    out = doctor(tmp_path)
    assert "anthropic" not in out  # no key, no endpoint: no native entry
    assert re.search(r"^sandbox: \S+$", out, re.M)
