"""`explore` through `loopd run`: the parent on one catalog runtime, the read-only
child on another (`[delegate]`), both at the loopback fake model on their own
routes, with the real tools and sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopd.store.sqlite import SqliteStore
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import isolated_env, run_loopd

pytestmark = pytest.mark.e2e


def providers(fake: FakeLLMServer, cheap_models: str = '["child-model"]') -> str:
    """The parent's runtime `main` (the default) and the child's `cheap`, each at the
    fake model on its own route."""
    return f"""
[defaults]
runtime = "main"

[providers.main]
kind = "anthropic"
base_url = "{fake.base_url}"
api_key_env = "ANTHROPIC_API_KEY"
models = ["parent-model"]

[providers.cheap]
kind = "openai_chat"
base_url = "{fake.openai_base_url}"
api_key_env = "OPENAI_API_KEY"
models = {cheap_models}
"""


def configured(tmp_path: Path, fake: FakeLLMServer, text: str) -> dict[str, str]:
    """The environment of a run whose user config file holds `text`."""
    file = tmp_path / "config" / "loopd" / "config.toml"
    file.parent.mkdir(parents=True)
    file.write_text(text)
    return isolated_env(tmp_path, fake, OPENAI_API_KEY="child-key")


def parent_explores(fake: FakeLLMServer, workspace: Path) -> str:
    """A workspace file, and a parent that explores one question about it and then
    answers; the question."""
    (workspace / "a.py").write_text("def handler():\n    return 42\n")
    question = "What does handler in a.py return?"
    fake.script(
        "/v1/messages",
        Reply(tool_calls=(ScriptedCall("explore", {"question": question}),)),
        Reply(text="It returns 42."),
    )
    return question


def config(fake: FakeLLMServer) -> str:
    return providers(fake) + '\n[delegate]\nruntime = "cheap"\n'


def test_explore_runs_its_child_on_the_delegate_runtime(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    question = parent_explores(fake_llm, workspace)
    fake_llm.script(
        "/v1/chat/completions",
        Reply(tool_calls=(ScriptedCall("read", {"path": "a.py"}),)),
        Reply(text="handler() returns 42 (a.py, line 2)."),
    )
    env = configured(tmp_path, fake_llm, config(fake_llm))
    done = run_loopd(["run", "find out what handler returns"], env, workspace)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It returns 42."
    assert f"→ Explore: {question}" in done.stderr and f"✓ Explore: {question}" in done.stderr
    routes = [(r.path, r.body["model"]) for r in fake_llm.requests]
    assert routes == [
        ("/v1/messages", "parent-model"),
        ("/v1/chat/completions", "child-model"),
        ("/v1/chat/completions", "child-model"),
        ("/v1/messages", "parent-model"),
    ]
    parent_tools = [t["name"] for t in fake_llm.requests[0].body["tools"]]
    child_tools = [t["function"]["name"] for t in fake_llm.requests[1].body["tools"]]
    assert "explore" in parent_tools and "explore" not in child_tools
    report = json.dumps(fake_llm.requests[3].body["messages"][-1])
    assert "handler() returns 42 (a.py, line 2)." in report and "Read: a.py" in report


def role_config(fake: FakeLLMServer) -> str:
    """The explore agent's own entry: a scope of one runtime, a model alias and an
    effort whose target id is what the endpoint must see."""
    kid = '{ id = "child-model", aliases = ["kid"], targets = { high = "child-model-high" } }'
    models = f'["other-model", {kid}]'
    role = '\n[agents.explore]\nruntimes = ["cheap"]\nmodel = "kid"\neffort = "high"\n'
    return providers(fake, models) + role


def test_explore_runs_on_its_agent_entry_with_the_role_model_resolved(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    parent_explores(fake_llm, workspace)
    fake_llm.script("/v1/chat/completions", Reply(text="handler() returns 42."))
    env = configured(tmp_path, fake_llm, role_config(fake_llm))
    done = run_loopd(["run", "find out what handler returns"], env, workspace)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It returns 42."
    sent = [(r.path, r.body["model"]) for r in fake_llm.requests]
    assert sent == [
        ("/v1/messages", "parent-model"),
        ("/v1/chat/completions", "child-model-high"),  # the alias, at the role's effort
        ("/v1/messages", "parent-model"),
    ]
    assert fake_llm.requests[1].body["reasoning_effort"] == "high"

    store = SqliteStore(tmp_path / "data" / "sessions.db")
    try:
        (session,) = store.list_sessions(None, limit=10).sessions
        record = store.get(session.id)
        assert record is not None
        assert record.runtime["identity"]["agent"] == "main"
        assert record.runtime["identity"]["runtime"] == "main"
        outputs = [
            update["rawOutput"]
            for update in store.events(session.id)
            if "explore" in (update.get("rawOutput") or {})
        ]
    finally:
        store.close()
    child = {"agent": "explore", "runtime": "cheap", "model": "child-model-high"}
    assert [o["explore"]["child"] for o in outputs] == [child]


def test_catalog_shows_each_agent_and_its_entries(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    env = configured(tmp_path, fake_llm, role_config(fake_llm))
    shown = run_loopd(["catalog", "--json"], env, workspace)
    assert shown.returncode == 0, shown.stderr
    agents = {a["name"]: a for a in json.loads(shown.stdout)["agents"]}
    assert agents["explore"] == {
        "name": "explore",
        "runtimes": ["cheap"],
        "default": "cheap",
        "model": "child-model",
        "effort": "high",
    }
    assert agents["main"]["default"] == "main"
    assert {"cheap", "main"} <= set(agents["main"]["runtimes"])
    text = run_loopd(["catalog"], env, workspace).stdout
    assert any(
        line.split()[:3] == ["explore", "cheap", "(child-model,"] for line in text.splitlines()
    )


def test_an_explore_model_the_session_runtime_lacks_is_a_config_error(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    """`[delegate] model` alone goes with the session's runtime: one that does not
    offer it stops the run before any request, naming the file and the key."""
    env = configured(
        tmp_path, fake_llm, providers(fake_llm) + '\n[delegate]\nmodel = "child-model"\n'
    )
    file = tmp_path / "config" / "loopd" / "config.toml"
    done = run_loopd(["run", "hello"], env, workspace)
    assert done.returncode == 2
    assert f"{file}: delegate.model: runtime 'main' does not offer model 'child-model'" in (
        done.stderr
    )
    assert fake_llm.requests == []
