"""A model alias is resolved by the catalog: the provider is sent the model's id,
whether the alias comes from `--model` or from the session's model option."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply
from tests.e2e.cli.test_run import loopd
from tests.e2e.conftest import isolated_env

pytestmark = pytest.mark.e2e


def test_run_with_an_alias_sends_the_id(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "[providers.lab]\n"
        'kind = "anthropic"\n'
        f'base_url = "{fake_llm.base_url}"\n'
        'models = ["lab-small-1", { id = "lab-large-2", aliases = ["large"] }]\n'
        "[defaults]\n"
        'runtime = "lab"\n'
    )
    fake_llm.script("*", Reply(text="big answer"))
    env = isolated_env(tmp_path, None)
    done = loopd(["run", "--model", "large", "hello"], env, workspace)
    assert done.returncode == 0, done.stderr
    [request] = fake_llm.requests
    assert request.body["model"] == "lab-large-2"
