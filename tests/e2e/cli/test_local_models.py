"""A local model server through the whole native stack (`loopd.app`): a keyless
OpenAI-compatible provider sends no auth header, a provider with no model list offers
what its endpoint lists, and one whose endpoint lists nothing says how to fix that."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.app import build_app
from loopd.catalog import catalog_to_json, catalog_to_text, discover_catalog
from loopd.catalog.listing import listed_models
from loopd.config import load_config
from loopd.protocol.events import Prompt, TextBlock
from loopd.testing.fake_llm import FakeLLMServer, Reply
from loopd.testing.harness import RecordingLink
from tests.e2e.conftest import isolated_env

pytestmark = pytest.mark.e2e
HI = Prompt((TextBlock("hi"),))


def _config(tmp_path: Path, text: str) -> None:
    folder = tmp_path / "config" / "loopd"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(text)


async def test_the_readme_local_provider_sends_no_auth_header(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    _config(
        tmp_path,
        f'[defaults]\nruntime = "local"\n\n[providers.local]\nkind = "openai_chat"\n'
        f'base_url = "{fake_llm.openai_base_url}"\nmodels = ["qwen3-coder"]\n',
    )
    fake_llm.script("*", Reply(text="hello from a local model"))
    app = build_app(isolated_env(tmp_path, None), str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link)
        outcome = await app.manager.prompt(view.id, HI, link)
    finally:
        await app.aclose()
    assert (outcome.stop_reason, outcome.error) == ("end_turn", None)
    [request] = fake_llm.requests
    assert request.path == "/v1/chat/completions"
    assert "authorization" not in request.headers
    assert request.body["model"] == "qwen3-coder"


async def test_an_unlisted_provider_offers_what_the_endpoint_lists(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    fake_llm.models = ["qwen3-coder:30b", "llama3.2"]
    fake_llm.script("*", Reply(text="hi"), Reply(text="again"))
    env = isolated_env(tmp_path, None, OPENAI_BASE_URL=fake_llm.openai_base_url)
    app = build_app(env, str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link)
        model = next(o for o in view.config_options if o.id == "model")
        assert model.current_value == "qwen3-coder:30b"
        assert [c.value for c in model.choices] == ["qwen3-coder:30b", "llama3.2"]
        outcome = await app.manager.prompt(view.id, HI, link)
        await app.manager.set_config(view.id, "model", "llama3.2")
        await app.manager.prompt(view.id, HI, link)
        second = await app.manager.new_session(str(workspace), link)
    finally:
        await app.aclose()
    assert outcome.stop_reason == "end_turn"
    posts = [r for r in fake_llm.requests if r.path == "/v1/chat/completions"]
    assert [r.body["model"] for r in posts] == ["qwen3-coder:30b", "llama3.2"]
    assert all("authorization" not in r.headers for r in fake_llm.requests)
    assert second.id != view.id
    lists = [r for r in fake_llm.requests if r.path == "/v1/models"]
    assert len(lists) == 1, "the list is kept, not asked for every session"

    listed = await listed_models(discover_catalog(load_config(env, workspace), env).catalog, env)
    assert listed["openai"].models == ("qwen3-coder:30b", "llama3.2")


async def test_an_endpoint_that_lists_nothing_says_how_to_configure_a_model(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    fake_llm.models = []  # Ollama with nothing pulled
    env = isolated_env(tmp_path, None, OLLAMA_HOST=fake_llm.base_url)
    app = build_app(env, str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link)
        assert "model" not in {o.id for o in view.config_options}, "no made-up model"
        outcome = await app.manager.prompt(view.id, HI, link)
    finally:
        await app.aclose()
    assert outcome.error is not None
    assert "runtime 'ollama' has no model" in outcome.error
    assert "/v1/models lists none" in outcome.error
    assert 'models = ["..."] under [providers.ollama]' in outcome.error
    assert not [r for r in fake_llm.requests if r.path != "/v1/models"], "nothing was sent"

    build = discover_catalog(load_config(env, workspace), env)
    listed = await listed_models(build.catalog, env)
    text = catalog_to_text(build.catalog, build.skipped, listed)
    assert "(none listed)" in text
    assert "no model for ollama: its endpoint lists none; set models" in text
    [entry] = catalog_to_json(build.catalog, build.skipped, listed)["entries"]
    assert entry["listed_models"] == []
