from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from loopd.protocol.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    MissingCredentials,
    Overloaded,
    ProviderError,
    RateLimited,
    Transient,
)
from loopd.providers import (
    AnthropicProvider,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    endpoint_from_env,
    make_provider,
    provider_from_env,
)
from loopd.providers.classify import classify, error_from_response, retry_after_seconds
from loopd.providers.factory import Endpoint, ollama_base_url


@pytest.mark.parametrize(
    ("status", "kinds", "message", "expected"),
    [
        (400, ("invalid_request_error", ""), "prompt is too long: 2 > 1", ContextOverflow),
        (
            400,
            ("invalid_request_error", "invalid_request_error"),
            "maximum context length is 8k",
            ContextOverflow,
        ),
        (400, ("", "context_length_exceeded"), "", ContextOverflow),
        (429, ("insufficient_quota", ""), "quota", BadRequest),
        (429, ("", ""), "", RateLimited),
        (401, ("", ""), "", AuthError),
        (403, ("permission_error", ""), "", AuthError),
        (529, ("overloaded_error", ""), "", Overloaded),
        (503, ("", ""), "", Overloaded),
        (500, ("api_error", ""), "", Transient),
        (408, ("", ""), "", Transient),
        (404, ("not_found_error", ""), "", BadRequest),
        (None, ("overloaded_error", ""), "", Overloaded),
        (None, ("server_error", ""), "", Transient),
        (None, ("invalid_request_error", ""), "", BadRequest),
    ],
)
def test_classify(status: int | None, kinds: tuple[str, ...], message: str, expected: type) -> None:
    error = classify(status=status, kinds=kinds, message=message)
    assert type(error) is expected
    assert error.status == status


def test_error_body_that_is_not_json() -> None:
    error = error_from_response(502, {}, b"<html>bad gateway</html>")
    assert isinstance(error, Transient)
    assert "bad gateway" in error.message


def test_an_error_body_nested_thousands_deep_is_text_not_a_recursion_error() -> None:
    """A gateway (or a proxy) answering an error with hostile JSON: classified by its
    status, the body shown as text; decoding it used to raise RecursionError."""
    error = error_from_response(400, {}, b'{"error":' * 5_000 + b"1" + b"}" * 5_000)
    assert isinstance(error, BadRequest)
    assert error.message.startswith('400: {"error":{"error":')


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < (retry_after_seconds({"retry-after": later}) or 0) <= 30


def test_missing_credentials_names_the_variables() -> None:
    with pytest.raises(MissingCredentials) as raised:
        endpoint_from_env({})
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OLLAMA_HOST",
    ):
        assert name in str(raised.value)
    assert isinstance(raised.value, ProviderError)
    with pytest.raises(MissingCredentials):
        endpoint_from_env({"ANTHROPIC_API_KEY": "k"}, "openai_responses")


@pytest.mark.parametrize(
    ("env", "kind", "expected"),
    [
        (
            {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"},
            None,
            Endpoint("anthropic", "https://api.anthropic.com", "a"),
        ),
        (
            {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
            None,
            Endpoint("anthropic", "http://127.0.0.1:9", ""),
        ),
        ({"OPENAI_API_KEY": "o"}, None, Endpoint("openai_chat", "https://api.openai.com/v1", "o")),
        (
            {"OPENAI_API_KEY": "o"},
            "openai_responses",
            Endpoint("openai_responses", "https://api.openai.com/v1", "o"),
        ),
        (
            {"OLLAMA_HOST": "0.0.0.0:11500"},
            None,
            Endpoint("openai_chat", "http://127.0.0.1:11500/v1", ""),
        ),
    ],
)
def test_endpoint_from_env(env: dict[str, str], kind: str | None, expected: Endpoint) -> None:
    assert endpoint_from_env(env, kind) == expected  # type: ignore[arg-type]


def test_ollama_host_forms() -> None:
    assert ollama_base_url("localhost") == "http://localhost:11434/v1"
    assert ollama_base_url("https://gpu.lan:8443") == "https://gpu.lan:8443/v1"


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("anthropic", AnthropicProvider),
        ("openai_chat", OpenAIChatProvider),
        ("openai_responses", OpenAIResponsesProvider),
    ],
)
async def test_make_provider_kinds(kind: str, cls: type) -> None:
    provider = make_provider(kind, api_key="k")  # type: ignore[arg-type]
    assert isinstance(provider, cls)
    await provider.aclose()


async def test_a_shared_client_is_borrowed_not_closed() -> None:
    async with httpx.AsyncClient() as client:
        first = provider_from_env({"ANTHROPIC_API_KEY": "a"}, client=client)
        second = provider_from_env({"OPENAI_API_KEY": "o"}, client=client)
        await first.aclose()
        await second.aclose()
        assert not client.is_closed
    assert client.is_closed
