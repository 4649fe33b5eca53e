"""Every provider against the loopback fake, for the whole fault list. The same
format-agnostic script drives all three wire formats."""

from __future__ import annotations

import asyncio

import pytest
from providers_support import REQUEST, collect, provider_for

from loopd.protocol.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    IncompleteStream,
    Overloaded,
    ProviderError,
    RateLimited,
    Transient,
)
from loopd.protocol.messages import TextPart, ThinkingPart, ToolUsePart
from loopd.protocol.model import (
    INVALID_JSON_KEY,
    TextDelta,
    ThinkingDelta,
    ToolCallBegin,
    Usage,
)
from loopd.providers import ClosableProvider, ProviderKind, make_provider
from loopd.testing.fake_llm import (
    ANY_ROUTE,
    FakeLLMServer,
    HttpError,
    RawStream,
    Reply,
    ScriptedCall,
)

CALLS = (ScriptedCall("read", {"path": "a.py"}), ScriptedCall("grep", {"pattern": "x", "n": 2}))


def texts(events: list[object], kind: type) -> str:
    return "".join(e.text for e in events if isinstance(e, kind))  # type: ignore[attr-defined]


async def test_text_reply(fake: FakeLLMServer, provider: ClosableProvider) -> None:
    fake.script(ANY_ROUTE, Reply(text="Hello there, world.", input_tokens=30, output_tokens=4))
    events, done = await collect(provider)
    assert texts(events, TextDelta) == "Hello there, world."
    assert len(events) == 3  # word-sized deltas arrive as they stream
    assert done.parts == (TextPart("Hello there, world."),)
    assert done.stop == "end_turn"
    assert done.usage == Usage(input_tokens=30, output_tokens=4)


async def test_cached_tokens_are_separate_from_input(
    fake: FakeLLMServer, provider: ClosableProvider
) -> None:
    fake.script(ANY_ROUTE, Reply(text="ok", input_tokens=10, cached_tokens=90))
    _, done = await collect(provider)
    assert (done.usage.input_tokens, done.usage.cache_read_tokens) == (10, 90)
    assert done.usage.context_tokens == 100


async def test_thinking_then_text(
    fake: FakeLLMServer, provider: ClosableProvider, kind: ProviderKind
) -> None:
    fake.script(ANY_ROUTE, Reply(thinking="Look at a.py first.", text="Done.", signature="sig-1"))
    events, done = await collect(provider)
    assert texts(events, ThinkingDelta) == "Look at a.py first."
    thinking, text = done.parts
    assert isinstance(thinking, ThinkingPart)
    assert thinking.text == "Look at a.py first."
    # Chat Completions has no signed reasoning; the other two carry it to echo back.
    assert thinking.signature == ("" if kind == "openai_chat" else "sig-1")
    assert text == TextPart("Done.")


async def test_one_tool_call(fake: FakeLLMServer, provider: ClosableProvider) -> None:
    fake.script(
        ANY_ROUTE,
        Reply(text="Reading.", tool_calls=(ScriptedCall("read", {"path": "a.py"}, id="c1"),)),
    )
    events, done = await collect(provider)
    assert [e for e in events if isinstance(e, ToolCallBegin)] == [ToolCallBegin("c1", "read")]
    assert done.parts == (TextPart("Reading."), ToolUsePart("c1", "read", {"path": "a.py"}))
    assert done.stop == "tool_use"


async def test_parallel_tool_calls_keep_the_model_order(
    fake: FakeLLMServer, provider: ClosableProvider
) -> None:
    fake.script(ANY_ROUTE, Reply(tool_calls=CALLS))
    events, done = await collect(provider)
    assert [e.name for e in events if isinstance(e, ToolCallBegin)] == ["read", "grep"]
    assert [(p.name, p.input) for p in done.parts if isinstance(p, ToolUsePart)] == [
        ("read", {"path": "a.py"}),
        ("grep", {"pattern": "x", "n": 2}),
    ]
    begun = [e.id for e in events if isinstance(e, ToolCallBegin)]
    assert begun == [p.id for p in done.parts if isinstance(p, ToolUsePart)]


@pytest.mark.parametrize(
    "delivery",
    [{"chunk": 1}, {"chunk": 7}, {"pings": True}, {"unknown_events": True}],
    ids=["1-byte", "7-byte", "pings", "unknown-events"],
)
async def test_delivery_does_not_change_the_reply(
    fake: FakeLLMServer, provider: ClosableProvider, delivery: dict[str, object]
) -> None:
    content = {"thinking": "Hmm.", "text": "Two calls: é ✓", "tool_calls": CALLS}
    fake.script(ANY_ROUTE, Reply(**content), Reply(**content, **delivery))  # type: ignore[arg-type]
    _, plain = await collect(provider)
    events, delivered = await collect(provider)
    assert delivered == plain
    assert texts(events, TextDelta) == "Two calls: é ✓"


async def test_invalid_tool_arguments_are_kept_raw(
    fake: FakeLLMServer, provider: ClosableProvider
) -> None:
    fake.script(
        ANY_ROUTE,
        Reply(tool_calls=(ScriptedCall("read", raw_arguments='{"path": "a'),), stop="max_tokens"),
    )
    _, done = await collect(provider)
    (use,) = done.parts
    assert isinstance(use, ToolUsePart)
    assert use.input == {INVALID_JSON_KEY: '{"path": "a'}


DEEP = "[" * 5_000 + "]" * 5_000  # past the decoder's recursion limit


async def test_tool_arguments_nested_thousands_deep_are_kept_raw(
    fake: FakeLLMServer, provider: ClosableProvider
) -> None:
    fake.script(ANY_ROUTE, Reply(tool_calls=(ScriptedCall("read", raw_arguments=DEEP),)))
    _, done = await collect(provider)
    (use,) = done.parts
    assert isinstance(use, ToolUsePart)
    assert use.input == {INVALID_JSON_KEY: DEEP}


async def test_an_event_nested_thousands_deep_is_a_provider_error(
    fake: FakeLLMServer, provider: ClosableProvider
) -> None:
    """A hostile gateway's event: refused as malformed (a ProviderError the turn ends
    with), never a RecursionError out of the stream."""
    fake.script(ANY_ROUTE, RawStream(((None, DEEP),)))
    with pytest.raises(ProviderError):
        await collect(provider)


@pytest.mark.parametrize("stop", ["max_tokens", "refusal"])
async def test_stop_reasons(fake: FakeLLMServer, provider: ClosableProvider, stop: str) -> None:
    fake.script(ANY_ROUTE, Reply(text="cut", stop=stop))  # type: ignore[arg-type]
    _, done = await collect(provider)
    assert done.stop == stop


async def test_mid_stream_error_after_a_200(
    fake: FakeLLMServer, provider: ClosableProvider
) -> None:
    fake.script(ANY_ROUTE, Reply(text="Partial answer", fail="overloaded"))
    seen: list[object] = []
    with pytest.raises(Overloaded):
        async for event in provider.stream(REQUEST):
            seen.append(event)
    assert texts(seen, TextDelta) == "Partial answer"


@pytest.mark.parametrize(
    ("fail", "error"),
    [
        ("context_overflow", ContextOverflow),
        ("rate_limited", RateLimited),
        ("server_error", Transient),
    ],
)
async def test_mid_stream_error_kinds(
    fake: FakeLLMServer, provider: ClosableProvider, fail: str, error: type[Exception]
) -> None:
    fake.script(ANY_ROUTE, Reply(text="x", fail=fail))  # type: ignore[arg-type]
    with pytest.raises(error):
        await collect(provider)


async def test_429_with_retry_after(fake: FakeLLMServer, provider: ClosableProvider) -> None:
    fake.script(
        ANY_ROUTE,
        HttpError("rate_limited", retry_after=3),
        HttpError("rate_limited", retry_after=9, retry_after_ms=1500),
    )
    with pytest.raises(RateLimited) as seconds:
        await collect(provider)
    assert seconds.value.retry_after == 3.0
    assert seconds.value.status == 429
    assert seconds.value.retryable
    with pytest.raises(RateLimited) as millis:
        await collect(provider)
    assert millis.value.retry_after == 1.5  # retry-after-ms wins


@pytest.mark.parametrize(
    ("step", "error"),
    [
        (HttpError("overloaded", status=529), Overloaded),
        (HttpError("overloaded"), Overloaded),
        (HttpError("server_error"), Transient),
        (HttpError("server_error", status=502), Transient),
        (HttpError("context_overflow"), ContextOverflow),
        (HttpError("auth"), AuthError),
        (HttpError("bad_request"), BadRequest),
    ],
    ids=["529", "overloaded-default", "500", "502", "overflow", "401", "400"],
)
async def test_error_statuses(
    fake: FakeLLMServer, provider: ClosableProvider, step: HttpError, error: type[Exception]
) -> None:
    fake.script(ANY_ROUTE, step)
    with pytest.raises(error) as raised:
        await collect(provider)
    assert raised.value.retryable is (error in (Overloaded, Transient))  # type: ignore[attr-defined]


async def test_500_then_success(fake: FakeLLMServer, provider: ClosableProvider) -> None:
    fake.script(ANY_ROUTE, HttpError("server_error"), Reply(text="fine"))
    with pytest.raises(Transient):
        await collect(provider)
    _, done = await collect(provider)  # providers raise once; the engine retries
    assert done.parts == (TextPart("fine"),)


async def test_dropped_connection_is_an_incomplete_stream(
    fake: FakeLLMServer, provider: ClosableProvider
) -> None:
    fake.script(ANY_ROUTE, Reply(text="one two three four", drop_after=4))
    with pytest.raises(IncompleteStream) as raised:
        await collect(provider)
    assert raised.value.retryable


async def test_stall_hits_the_idle_timeout(fake: FakeLLMServer, kind: ProviderKind) -> None:
    fake.script(ANY_ROUTE, Reply(text="slow reply", pause_after=2, stall=30))
    provider = provider_for(kind, fake, idle_timeout=0.05)
    try:
        with pytest.raises(Transient, match="no data"):
            await collect(provider)
    finally:
        await provider.aclose()


async def test_cancel_mid_stream(fake: FakeLLMServer, provider: ClosableProvider) -> None:
    fake.script(
        ANY_ROUTE, Reply(text="one two three four five six seven", pause_after=6, gate="go")
    )
    first = asyncio.Event()

    async def consume() -> None:
        async for event in provider.stream(REQUEST):
            if isinstance(event, TextDelta):
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    fake.release("go")


async def test_connection_refused_is_transient(kind: ProviderKind) -> None:
    with FakeLLMServer() as gone:
        url = gone.base_url
    provider = make_provider(
        kind, base_url=url + ("" if kind == "anthropic" else "/v1"), api_key="k"
    )
    try:
        with pytest.raises(Transient):
            await collect(provider)
    finally:
        await provider.aclose()


async def test_exhausted_script_says_so(provider: ClosableProvider) -> None:
    with pytest.raises(BadRequest, match="no scripted reply left"):
        await collect(provider)
