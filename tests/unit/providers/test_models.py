"""`GET /v1/models` against the loopback fake: what is listed, an empty list, a server
that is down, and the cache that keeps sessions from asking each time."""

from __future__ import annotations

import socket

import httpx

from loopd.protocol.messages import user_text
from loopd.protocol.model import ModelRequest
from loopd.providers import ProviderKind, make_provider
from loopd.providers.models import ModelListing, fetch_models
from loopd.testing.fake_llm import FakeLLMServer, Reply


async def test_the_listed_ids_come_back_in_order_without_an_auth_header(
    fake: FakeLLMServer,
) -> None:
    fake.models = ["qwen3-coder", "llama3.2", "qwen3-coder"]
    async with httpx.AsyncClient() as client:
        listed = await fetch_models(fake.openai_base_url, "", client=client)
    assert (listed.models, listed.problem) == (("qwen3-coder", "llama3.2"), "")
    [request] = fake.requests
    assert request.path == "/v1/models"
    assert "authorization" not in request.headers


async def test_a_key_is_sent_as_a_bearer_token(fake: FakeLLMServer) -> None:
    fake.models = []
    async with httpx.AsyncClient() as client:
        listed = await fetch_models(fake.openai_base_url, "sk-local", client=client)
    assert listed.models == ()
    assert not listed.problem, "an empty list is an answer, not a failure"
    assert fake.requests[0].headers["authorization"] == "Bearer sk-local"


async def test_a_server_that_is_down_is_a_problem_not_an_exception() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with httpx.AsyncClient() as client:
        listed = await fetch_models(f"http://127.0.0.1:{port}/v1", "", client=client)
    assert listed.models == ()
    assert f"127.0.0.1:{port}/v1/models did not answer" in listed.problem


async def test_a_listing_is_kept_for_its_ttl_and_failures_are_not(fake: FakeLLMServer) -> None:
    clock = [0.0]
    fake.models = ["a"]
    listing = ModelListing(fake.openai_base_url, "", ttl=60, now=lambda: clock[0])
    assert await listing.models() == ("a",)
    fake.models = ["a", "b"]
    clock[0] = 59
    assert await listing.models() == ("a",), "kept: sessions do not ask each time"
    clock[0] = 61
    assert await listing.models() == ("a", "b"), "a model pulled meanwhile shows up"
    assert len(fake.requests) == 2

    down = ModelListing("http://127.0.0.1:9/v1", "", timeout=2)
    assert (await down.get()).problem
    assert down.last is not None and down.last.problem


async def test_no_key_means_no_auth_header_for_every_kind(fake: FakeLLMServer) -> None:
    """A keyless local server gets no auth header at all: `Bearer ` with nothing after
    it is an invalid header httpx refuses, and an empty `x-api-key` is no better."""
    kinds: tuple[ProviderKind, ...] = ("anthropic", "openai_chat", "openai_responses")
    for kind in kinds:
        fake.script("*", Reply(text="hi"))
        url = fake.base_url if kind == "anthropic" else fake.openai_base_url
        provider = make_provider(kind, base_url=url, api_key="")
        try:
            events = [e async for e in provider.stream(ModelRequest("m", "", (user_text("x"),)))]
        finally:
            await provider.aclose()
        assert events, kind
        sent = fake.requests[-1].headers
        assert "authorization" not in sent and "x-api-key" not in sent, kind
