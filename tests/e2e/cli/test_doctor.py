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
from loopd.policy.tiers import Tier
from tests.e2e.conftest import serving

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]


def doctor(tmp_path: Path, code: int = 0, **extra: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "LOOPD_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT / "server"),
        **serving(),
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
    assert done.returncode == code, done.stderr
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
    out = doctor(tmp_path, code=1)  # no runtime works
    assert "anthropic" not in out  # no key, no endpoint: no native entry
    assert re.search(r"^sandbox: \S+$", out, re.M)


def test_doctor_shows_config_files_credentials_and_tools_never_values(tmp_path: Path) -> None:
    config = tmp_path / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[providers.groq]\nkind = "openai_chat"\napi_key_env = "GROQ_API_KEY"\n')
    out = doctor(
        tmp_path,
        ANTHROPIC_API_KEY="sk-secret-anthropic",
        GROQ_API_KEY="gsk-secret",
        OPENAI_BASE_URL="https://user:pw@llm.example/v1?token=t",
    )
    assert f"user       {config}  (found)" in out
    assert f"workspace  {tmp_path / '.loopd' / 'config.toml'}  (not found)" in out
    assert re.search(r"^  ANTHROPIC_API_KEY\s+set$", out, re.M)
    assert re.search(r"^  OPENAI_API_KEY\s+not set$", out, re.M)
    assert re.search(r"^  GROQ_API_KEY\s+set$", out, re.M)
    assert re.search(r"^  OPENAI_BASE_URL\s+https://llm.example/v1$", out, re.M)
    assert re.search(r"^  rg\s+(/\S+|not found)  \(ripgrep", out, re.M)
    assert re.search(r"^  bwrap\s+(/\S+|not found)  \(bubblewrap", out, re.M)
    for secret in ("sk-secret", "gsk-secret", "pw@", "token=t"):
        assert secret not in out


def test_a_bad_config_file_is_shown_and_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "config" / "loopd" / "config.toml"  # the user's own file
    config.parent.mkdir(parents=True)
    config.write_text('[defaults]\nmode = "yolo"\n')
    out = doctor(tmp_path, code=2, ANTHROPIC_API_KEY="x")
    assert f"error: {config}: defaults.mode: unknown mode 'yolo'" in out


def test_a_bad_untrusted_workspace_file_is_said_ignored(tmp_path: Path) -> None:
    config = tmp_path / ".loopd" / "config.toml"
    config.parent.mkdir()
    config.write_text('[defaults]\nmode = "yolo"\n')
    out = doctor(tmp_path, code=0, ANTHROPIC_API_KEY="x")  # ignored, said on stderr
    assert f"{config}  (found, untrusted)" in out


def test_doctor_into_a_closed_pipe_stops_quietly(tmp_path: Path) -> None:
    """`loopd doctor | head -1`: the reader leaves after one line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server"), "LOOPD_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopd", "doctor"], cwd=tmp_path, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("loopd ")
    proc.stdout.close()
    errors = proc.stderr.read()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in errors and "BrokenPipe" not in errors


def test_doctor_shows_network_by_domain_and_whether_the_tier_holds_it(tmp_path: Path) -> None:
    assert "network by domain: off" in doctor(tmp_path, ANTHROPIC_API_KEY="x")
    (tmp_path / "config" / "loopd").mkdir(parents=True)
    (tmp_path / "config" / "loopd" / "config.toml").write_text(
        '[sandbox]\nallowed_domains = ["pypi.org", "*.pythonhosted.org:443"]\n'
        'denied_domains = ["evil.pypi.org"]\n'
    )
    out = doctor(tmp_path, ANTHROPIC_API_KEY="x")
    best = re.search(r"^sandbox: (\S+)$", out, re.M)
    assert best is not None
    state = "on" if Tier(best.group(1)).binds_proxy else "configured, NOT enforced"
    assert f"network by domain: {state}" in out
    assert "  allowed  pypi.org, *.pythonhosted.org:443\n" in out
    assert "  denied   evil.pypi.org\n" in out
