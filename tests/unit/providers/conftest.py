from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from providers_support import KINDS, provider_for

from loopd.providers import ClosableProvider, ProviderKind
from loopd.testing.fake_llm import FakeLLMServer


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> ProviderKind:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
async def provider(kind: ProviderKind, fake: FakeLLMServer) -> AsyncIterator[ClosableProvider]:
    made = provider_for(kind, fake)
    yield made
    await made.aclose()
