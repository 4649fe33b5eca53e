"""The session's own agent (`[agents.main]`) through `loopd run`: the runtimes it
lists are the ones a session may run on, whatever else the catalog holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply
from tests.e2e.conftest import isolated_env, run_loopd

pytestmark = pytest.mark.e2e


def config(fake: FakeLLMServer) -> str:
    return f"""
[providers.main]
kind = "anthropic"
base_url = "{fake.base_url}"
api_key_env = "ANTHROPIC_API_KEY"
models = ["parent-model"]

[providers.cheap]
kind = "openai_chat"
base_url = "{fake.openai_base_url}"
models = ["cheap-model"]

[agents.main]
runtimes = ["main"]
"""


def test_a_session_runs_only_on_the_main_agents_runtimes(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path, fake_llm)
    file = tmp_path / "config" / "loopd" / "config.toml"
    file.parent.mkdir(parents=True)
    file.write_text(config(fake_llm))

    refused = run_loopd(["run", "--runtime", "cheap", "hello"], env, workspace)
    assert refused.returncode == 2
    assert "unknown runtime 'cheap' (available: main)" in refused.stderr
    assert fake_llm.requests == []

    fake_llm.script("/v1/messages", Reply(text="hi"))
    done = run_loopd(["run", "hello"], env, workspace)  # main's default: the one it lists
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi"
    assert [(r.path, r.body["model"]) for r in fake_llm.requests] == [
        ("/v1/messages", "parent-model")
    ]
