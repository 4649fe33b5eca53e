"""A model stream that stalls ends soon, says what is happening, and shows the text
it had streamed once. The engine runs on a fake clock (its backoff waits); the
provider is real and talks HTTP to the loopback fake model, whose replies stall
mid-stream for as long as the test runs."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from loopd.engine.loop import Engine, EngineConfig, EnginePorts
from loopd.protocol.events import AgentMessageChunk, Prompt, TextBlock
from loopd.protocol.messages import TextPart
from loopd.providers import ClosableProvider, ProviderKind, make_provider
from loopd.testing.fake_llm import FakeLLMServer, Reply
from loopd.testing.fakes import (
    FakeClock,
    FakeToolBox,
    MemoryJournal,
    RecordingEmitter,
    ScriptedApprover,
    ScriptedPolicy,
)

IDLE = 0.3  # seconds of silence that make a stall, for the test
STALLS = Reply(
    text="alpha beta gamma delta epsilon zeta eta theta", pause_after=6, gate="never"
)  # held until close


@pytest.fixture
def fake() -> AsyncIterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(params=["anthropic", "openai_chat", "openai_responses"])
async def provider(
    request: pytest.FixtureRequest, fake: FakeLLMServer
) -> AsyncIterator[ClosableProvider]:
    kind: ProviderKind = request.param
    base = fake.base_url if kind == "anthropic" else fake.base_url + "/v1"
    made = make_provider(kind, base_url=base, api_key="k", idle_timeout=IDLE)
    yield made
    await made.aclose()


def engine_on(provider: ClosableProvider) -> tuple[Engine, RecordingEmitter, FakeClock]:
    emitter, clock = RecordingEmitter(), FakeClock()
    ports = EnginePorts(
        provider,
        FakeToolBox(),
        emitter,
        ScriptedApprover(),
        ScriptedPolicy(),
        MemoryJournal(),
        clock,
        jitter=lambda: 0.0,
    )
    return Engine("s", EngineConfig(model="m"), ports), emitter, clock


async def test_a_stall_is_said_retried_once_and_the_partial_text_shown_once(
    fake: FakeLLMServer, provider: ClosableProvider
) -> None:
    fake.script("*", STALLS, Reply(text="the whole answer"))
    engine, emitter, clock = engine_on(provider)
    started = time.monotonic()
    outcome = await engine.run(Prompt((TextBlock("hi"),)))

    assert outcome.stop_reason == "end_turn"
    assert time.monotonic() - started < 5 * IDLE + 2
    shown = emitter.text
    assert shown.count("alpha") == 1
    assert "stream stalled: no data for 0.3 s" in shown
    assert "retry 1 of 1" in shown
    assert shown.endswith("the whole answer")
    assert engine.history[-1].parts == (TextPart("the whole answer"),)
    assert len(clock.sleeps) == 1  # one backoff, waited on the injected clock


async def test_a_stream_that_stalls_again_ends_the_turn_quickly_and_clearly(
    fake: FakeLLMServer, provider: ClosableProvider
) -> None:
    fake.script("*", STALLS, STALLS, Reply(text="never asked for"))
    engine, emitter, _ = engine_on(provider)
    started = time.monotonic()
    outcome = await engine.run(Prompt((TextBlock("hi"),)))

    assert time.monotonic() - started < 5 * IDLE + 2
    assert len(fake.requests) == 2
    assert outcome.error is not None and "no data from the model for 0.3 s" in outcome.error
    texts = [e.text for e in emitter.of(AgentMessageChunk)]
    assert "".join(texts).count("alpha") == 1  # the retry's partial text was never shown
    assert sum("stalled" in t for t in texts) == 1
