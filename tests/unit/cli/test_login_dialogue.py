"""`loopd login`'s questions, answered by a script, against the fake provider's real
model-list endpoint."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from loopd.cli.login import KEY_PROMPT, ask_login
from loopd.config.login import Login
from loopd.protocol.errors import ConfigError
from loopd.testing.fake_llm import FakeLLMServer


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        server.models = ["small-model", "large-model"]
        server.keys = {"sk-right"}
        yield server


class Script:
    """Answers the prompts in order and remembers which were asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answers.pop(0)


def test_an_openai_compatible_server_with_a_key_checked_and_a_model_chosen(
    fake: FakeLLMServer,
) -> None:
    script, out = Script("3", fake.openai_base_url, "sk-wrong", "sk-right", "2"), io.StringIO()
    login = ask_login({}, script, script, out)
    assert login == Login(
        {"OPENAI_API_KEY": "sk-right", "OPENAI_BASE_URL": fake.openai_base_url},
        {"runtime": "openai", "model": "large-model"},
    )
    assert script.prompts.count(KEY_PROMPT) == 2
    assert "The key was refused" in out.getvalue()
    checks = [r for r in fake.requests if r.path == "/v1/models"]
    assert [r.headers["authorization"] for r in checks] == ["Bearer sk-wrong", "Bearer sk-right"]


def test_anthropic_checks_the_key_where_the_environment_points(fake: FakeLLMServer) -> None:
    script = Script("1", "sk-right", "1")
    login = ask_login({"ANTHROPIC_BASE_URL": fake.base_url}, script, script, io.StringIO())
    assert login.env == {"ANTHROPIC_API_KEY": "sk-right"}  # the URL stays the environment's
    assert login.defaults == {"runtime": "anthropic", "model": "small-model"}
    [check] = fake.requests
    assert check.headers["x-api-key"] == "sk-right"
    assert "anthropic-version" in check.headers


def test_ollama_asks_no_key_and_sends_no_auth_header(fake: FakeLLMServer) -> None:
    fake.keys = None
    host = fake.base_url.removeprefix("http://")
    script = Script("4", host, "1")
    login = ask_login({}, script, script, io.StringIO())
    assert login.env == {"OLLAMA_HOST": host}
    assert KEY_PROMPT not in script.prompts
    assert "authorization" not in fake.requests[0].headers


def test_a_gateway_without_a_model_list_lets_the_person_name_the_model(
    fake: FakeLLMServer,
) -> None:
    """A 404 for the model list is no list, not a bad key: the key is kept unchecked
    and the person names the model."""
    fake.models = None
    script, out = Script("3", fake.openai_base_url, "sk-any", "gw-model"), io.StringIO()
    login = ask_login({}, script, script, out)
    assert login == Login(
        {"OPENAI_API_KEY": "sk-any", "OPENAI_BASE_URL": fake.openai_base_url},
        {"runtime": "openai", "model": "gw-model"},
    )
    assert script.prompts.count(KEY_PROMPT) == 1
    said = out.getvalue()
    assert "answered 404: the server has no model list" in said
    assert "refused" not in said
    assert script.prompts[-1].startswith("Model id, as the server names it")


def test_three_refused_keys_end_the_login(fake: FakeLLMServer) -> None:
    script = Script("3", fake.openai_base_url, "a", "b", "c")
    with pytest.raises(ConfigError, match="no key was accepted"):
        ask_login({}, script, script, io.StringIO())


def test_an_unreachable_server_is_said(fake: FakeLLMServer) -> None:
    script = Script("3", "http://127.0.0.1:9/v1", "sk")
    with pytest.raises(ConfigError, match="could not check the key"):
        ask_login({}, script, script, io.StringIO())


def test_a_cli_choice_needs_the_cli_on_path() -> None:
    script = Script("9", "5")  # out of range first: asked again
    out = io.StringIO()
    with pytest.raises(ConfigError, match="`claude` is not on PATH"):
        ask_login({"PATH": "/nonexistent"}, script, script, out)
    assert "Type a number from 1 to 6" in out.getvalue()
