"""Skills through `loopd run`: the index in the system prompt, a body loaded when the
model uses the `skill` tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import isolated_env, run_loopd

pytestmark = pytest.mark.e2e


def test_the_index_is_in_the_prompt_and_a_skill_loads_on_use(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    folder = workspace / ".loopd" / "skills" / "release"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: release\ndescription: How to cut a release of this project\n---\n\n"
        "1. Bump the version in VERSION.\n2. Tag it.\n"
    )
    fake_llm.script(
        "*",
        Reply(tool_calls=(ScriptedCall("skill", {"name": "release"}),)),
        Reply(text="Following the release skill."),
    )
    done = run_loopd(["run", "cut a release"], isolated_env(tmp_path, fake_llm), workspace)
    assert done.returncode == 0, done.stderr
    first = fake_llm.requests[0].body
    system = json.dumps(first["system"])
    assert "- release: How to cut a release of this project" in system
    assert "Bump the version" not in json.dumps(first)  # only the index, not the body
    assert "skill" in [t["name"] for t in first["tools"]]
    loaded = json.dumps(fake_llm.requests[1].body["messages"][-1])
    assert "# Skill: release" in loaded and "1. Bump the version in VERSION." in loaded
    assert "✓ Load skill release" in done.stderr
