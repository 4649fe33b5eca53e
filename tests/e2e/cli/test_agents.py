"""The session's own agent (`[agents.main]`) through `loopd run`: the runtimes it
lists are the ones a session may run on, whatever else the catalog holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply
from tests.e2e.cli.test_explore import configured, providers
from tests.e2e.conftest import run_loopd

pytestmark = pytest.mark.e2e


def config(fake: FakeLLMServer) -> str:
    return providers(fake) + '\n[agents.main]\nruntimes = ["main"]\n'


def test_a_session_runs_only_on_the_main_agents_runtimes(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    env = configured(tmp_path, fake_llm, config(fake_llm))

    refused = run_loopd(["run", "--runtime", "cheap", "hello"], env, workspace)
    assert refused.returncode == 2
    assert "unknown runtime 'cheap' (available: main)" in refused.stderr
    assert fake_llm.requests == []

    fake_llm.script("/v1/messages", Reply(text="hi"))
    done = run_loopd(["run", "hello"], env, workspace)  # the default, which main admits
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi"
    assert [(r.path, r.body["model"]) for r in fake_llm.requests] == [
        ("/v1/messages", "parent-model")
    ]
