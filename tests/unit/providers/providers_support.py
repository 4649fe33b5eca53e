"""Helpers shared by the provider tests (fixtures live in conftest.py)."""

from __future__ import annotations

from loopd.protocol.messages import user_text
from loopd.protocol.model import ModelRequest, ResponseDone, StreamEvent, ToolSpec
from loopd.providers import ClosableProvider, ProviderKind, make_provider
from loopd.testing.fake_llm import FakeLLMServer

KINDS: tuple[ProviderKind, ...] = ("anthropic", "openai_chat", "openai_responses")
READ = ToolSpec(
    "read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
)
REQUEST = ModelRequest("fake-model", "You are terse.", (user_text("hi"),), tools=(READ,))


def provider_for(
    kind: ProviderKind, fake: FakeLLMServer, idle_timeout: float = 5.0
) -> ClosableProvider:
    url = fake.base_url if kind == "anthropic" else fake.openai_base_url
    return make_provider(kind, base_url=url, api_key="sk-test", idle_timeout=idle_timeout)


async def collect(
    provider: ClosableProvider, request: ModelRequest = REQUEST
) -> tuple[list[StreamEvent], ResponseDone]:
    """The deltas, and the one ResponseDone that must come last."""
    events = [event async for event in provider.stream(request)]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert not any(isinstance(e, ResponseDone) for e in events[:-1])
    return events[:-1], done
