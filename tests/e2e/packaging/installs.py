"""The package as people install it: one wheel built from this checkout, installed
into clean venvs (dependencies resolved from the declared ranges: no lock, no dev
group), one per way of installing and Python the package claims.

- `pip`: `pip install loopd_agent-*.whl` in a venv, the newest versions the ranges
  allow, as `pip install loopd-agent` resolves;
- `uv`: `uv venv` and `uv pip install`, the newest versions too, as
  `uv tool install` resolves;
- `lowest`: `uv pip install --resolution lowest-direct` with the declared ranges as
  the direct requirements, so every lower bound in pyproject.toml is tried: the
  `serve` extra's too (`loopd-agent[serve]`), whose `loopd serve` is checked there.
  The newest installs stay without it, as `uv tool install loopd-agent` gives.

Nothing here skips in CI (`CI` set): a missing uv or Python fails the run, since a
skip there would hide the only test of what is shipped. uv is the one the setup
installs (`.tools/uv-venv`), or one on PATH; the Pythons are pyenv's or on PATH
(uv cannot download Pythons here).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tests.e2e.conftest import ROOT
from tests.needs import missing

Resolver = Literal["pip", "uv", "lowest"]
PYPROJECT = ROOT / "pyproject.toml"


def find_uv() -> str:
    """The uv the setup installed, else one on PATH."""
    for candidate in (ROOT / ".tools" / "uv-venv" / "bin" / "uv", shutil.which("uv")):
        if candidate is not None and os.access(candidate, os.X_OK):
            return str(candidate)
    raise missing("uv is not installed")


def uv_settings() -> dict[str, str]:
    """What every uv here runs with, whatever its HOME: this user's cache (the
    dependencies come from it), no Python downloads, and the system's certificate
    store, as the setup's uv (a TLS-inspecting proxy's CA is installed there)."""
    ran = subprocess.run([find_uv(), "cache", "dir"], capture_output=True, text=True, check=True)
    return {
        "UV_CACHE_DIR": ran.stdout.strip(),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_SYSTEM_CERTS": os.environ.get("UV_SYSTEM_CERTS", "1"),
    }


def claimed_pythons() -> list[str]:
    """The Python versions the package claims (its classifiers, e.g. "3.12")."""
    classifiers = tomllib.loads(PYPROJECT.read_text())["project"]["classifiers"]
    found = (re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c) for c in classifiers)
    return [m.group(1) for m in found if m]


def find_python(version: str) -> str:
    """An interpreter of `version` ("3.12"): pyenv's newest patch release of it, else
    `python3.12` on PATH (a pyenv shim on PATH may not run: it is checked)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [str(p) for p in sorted(root.glob(f"versions/{version}.*/bin/python{version}"))]
    candidates.reverse()
    on_path = shutil.which(f"python{version}")
    for candidate in [*candidates, *([on_path] if on_path else [])]:
        probe = [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
        ran = subprocess.run(probe, capture_output=True, text=True, check=False)
        if ran.returncode == 0 and ran.stdout.strip() == version:
            return candidate
    how = f"install it (`pyenv install {version}`, or python{version} on PATH): uv downloads none"
    raise missing(f"Python {version} is not installed", how)


def tool_env() -> dict[str, str]:
    """The environment installers run in: this one, less what would point them at this
    checkout's venv, with `uv_settings`."""
    dropped = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return env | uv_settings()


def build_wheel(out: Path) -> Path:
    subprocess.run(
        [find_uv(), "build", "--wheel", "--quiet", "--out-dir", str(out), str(ROOT)],
        check=True,
        timeout=300,
        env=tool_env(),
    )
    [built] = out.glob("loopd_agent-*.whl")
    return built


def wheel_version(wheel: Path) -> str:
    """The version a wheel's name carries (loopd_agent-0.1.0-py3-none-any.whl)."""
    return wheel.name.split("-")[1]


@dataclass(frozen=True, slots=True)
class Install:
    """One way of installing on one Python."""

    python: str
    resolver: Resolver

    @property
    def name(self) -> str:
        return f"py{self.python}-{self.resolver}"

    @property
    def serves(self) -> bool:
        """Whether the `serve` extra is installed (the lowest installs)."""
        return self.resolver == "lowest"


def installs() -> list[Install]:
    """Newest versions on every claimed Python (pip on the oldest, as the README's
    pip line; uv on the others), and the lowest direct versions on every claimed
    Python too: a lower bound can lack wheels for a newer Python, or not work on
    it, and a venv costs a few seconds from uv's cache."""
    pythons = claimed_pythons()
    newest = [Install(p, "pip" if p == pythons[0] else "uv") for p in pythons]
    return [*newest, *(Install(p, "lowest") for p in pythons)]


@dataclass(frozen=True, slots=True)
class Venv:
    """A clean venv with the wheel installed."""

    path: Path
    install: Install

    def bin(self, name: str) -> str:
        return str(self.path / "bin" / name)


def make_venv(install: Install, wheel: Path, where: Path) -> Venv:
    python, uv, env = find_python(install.python), find_uv(), tool_env()
    steps: list[list[str]]
    match install.resolver:
        case "pip":  # pip seeded by uv (ensurepip costs seconds); pip resolves
            quiet = ["--quiet", "--disable-pip-version-check", "--no-compile"]
            steps = [
                [uv, "venv", "--quiet", "--seed", "--python", python, str(where)],
                [str(where / "bin" / "python"), "-m", "pip", "install", *quiet, str(wheel)],
            ]
        case "uv" | "lowest":
            lowest = ["--resolution", "lowest-direct", "-r", str(PYPROJECT), "--extra", "serve"]
            pip = [uv, "pip", "install", "--quiet", "--python", str(where / "bin" / "python")]
            steps = [
                [uv, "venv", "--quiet", "--python", python, str(where)],
                [*pip, *lowest, f"{wheel}[serve]"] if install.serves else [*pip, str(wheel)],
            ]
    for step in steps:
        ran = subprocess.run(step, capture_output=True, text=True, env=env, timeout=600)
        assert ran.returncode == 0, f"{install.name}: {' '.join(step)} failed:\n{ran.stderr}"
    return Venv(where, install)
