"""Wire details no `Reply` describes, sent verbatim: the local-server quirks of Chat
Completions, the Responses terminal events, Anthropic block details."""

from __future__ import annotations

import json
from typing import Any

import pytest
from providers_support import collect, provider_for

from loopd.protocol.errors import BadRequest, ContextOverflow, IncompleteStream, RateLimited
from loopd.protocol.messages import TextPart, ThinkingPart, ToolUsePart
from loopd.protocol.model import ToolCallBegin
from loopd.testing.fake_llm import ANY_ROUTE, FakeLLMServer, RawStream


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> tuple[None, dict[str, Any]]:
    choices = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    return None, {"object": "chat.completion.chunk", "choices": choices, **extra}


def call(
    index: int | None = None, id: str | None = None, name: str | None = None, args: Any = None
) -> dict[str, Any]:
    fragment: dict[str, Any] = {"function": {"name": name, "arguments": args}}
    if index is not None:
        fragment["index"] = index
    if id is not None:
        fragment["id"] = id
    return {"tool_calls": [fragment]}


DONE = (None, "[DONE]")


async def chat(fake: FakeLLMServer, *events: tuple[str | None, Any]) -> Any:
    fake.script(ANY_ROUTE, RawStream(tuple(events)))
    provider = provider_for("openai_chat", fake)
    try:
        return await collect(provider)
    finally:
        await provider.aclose()


async def test_stop_with_tool_calls_is_a_tool_turn(fake: FakeLLMServer) -> None:
    _, done = await chat(
        fake, chunk(call(0, "c1", "read", '{"path": "a"}')), chunk(finish="stop"), DONE
    )
    assert done.stop == "tool_use"
    assert done.parts == (ToolUsePart("c1", "read", {"path": "a"}),)


async def test_missing_index_uses_ids(fake: FakeLLMServer) -> None:
    events, done = await chat(
        fake,
        chunk(call(None, "c1", "read", '{"path": "a"}')),
        chunk(call(None, "c2", "read", '{"path": "b"}')),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert [p.input for p in done.parts] == [{"path": "a"}, {"path": "b"}]
    assert [e.id for e in events if isinstance(e, ToolCallBegin)] == ["c1", "c2"]


async def test_every_call_at_index_zero(fake: FakeLLMServer) -> None:
    _, done = await chat(
        fake,
        chunk(call(0, "c1", "read", "")),
        chunk(call(0, None, None, '{"path": "a"}')),
        chunk(call(0, "c2", "grep", "")),
        chunk(call(0, None, None, '{"q": 1}')),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert done.parts == (
        ToolUsePart("c1", "read", {"path": "a"}),
        ToolUsePart("c2", "grep", {"q": 1}),
    )


async def test_name_repeated_and_null_and_dict_arguments(fake: FakeLLMServer) -> None:
    _, done = await chat(
        fake,
        chunk({"tool_calls": []}),
        chunk(call(0, "c1", "read", '{"pa')),
        chunk(call(0, None, "read", 'th": "a"}')),
        chunk(call(0, None, None, None)),
        chunk(call(1, "c2", "grep", {"q": "x"})),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert done.parts == (
        ToolUsePart("c1", "read", {"path": "a"}),
        ToolUsePart("c2", "grep", {"q": "x"}),
    )


async def test_missing_id_gets_one(fake: FakeLLMServer) -> None:
    events, done = await chat(
        fake, chunk(call(0, None, "read", "{}")), chunk(finish="tool_calls"), DONE
    )
    (begin,) = [e for e in events if isinstance(e, ToolCallBegin)]
    assert begin.id
    assert done.parts == (ToolUsePart(begin.id, "read", {}),)


async def test_no_done_after_finish_and_no_usage(fake: FakeLLMServer) -> None:
    _, done = await chat(fake, chunk({"content": "hi"}), chunk(finish="stop"))
    assert done.parts == (TextPart("hi"),)
    assert done.usage.total == 0


async def test_chat_stream_without_finish_is_incomplete(fake: FakeLLMServer) -> None:
    with pytest.raises(IncompleteStream):
        await chat(fake, chunk({"content": "hi"}))


async def test_reasoning_field_and_junk_lines(fake: FakeLLMServer) -> None:
    _, done = await chat(
        fake,
        (None, "not json"),
        chunk({"reasoning": "think"}),
        chunk({"content": "ok"}),
        chunk(finish="stop"),
        DONE,
    )
    assert done.parts == (ThinkingPart("think"), TextPart("ok"))


async def test_chat_mid_stream_error(fake: FakeLLMServer) -> None:
    error = {
        "error": {
            "message": "Rate limit reached. Please try again in 20ms.",
            "code": "rate_limit_exceeded",
        }
    }
    with pytest.raises(RateLimited) as raised:
        await chat(fake, chunk({"content": "x"}), (None, error))
    assert raised.value.retry_after == 0.02


async def responses(fake: FakeLLMServer, *events: dict[str, Any]) -> Any:
    fake.script(ANY_ROUTE, RawStream(tuple((e["type"], e) for e in events)))
    provider = provider_for("openai_responses", fake)
    try:
        return await collect(provider)
    finally:
        await provider.aclose()


async def test_responses_failed_with_context_length_is_an_overflow(fake: FakeLLMServer) -> None:
    error = {
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model.",
    }
    with pytest.raises(ContextOverflow):
        await responses(
            fake, {"type": "response.failed", "response": {"status": "failed", "error": error}}
        )


async def test_responses_error_event(fake: FakeLLMServer) -> None:
    with pytest.raises(BadRequest):
        await responses(fake, {"type": "error", "code": "insufficient_quota", "message": "quota"})


async def test_responses_output_from_completed_when_no_item_done(fake: FakeLLMServer) -> None:
    item = {
        "type": "function_call",
        "call_id": "c9",
        "name": "read",
        "arguments": json.dumps({"path": "z"}),
    }
    response = {
        "status": "completed",
        "output": [item],
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    _, done = await responses(fake, {"type": "response.completed", "response": response})
    assert done.parts == (ToolUsePart("c9", "read", {"path": "z"}),)
    assert done.stop == "tool_use"


async def test_responses_closed_before_completed(fake: FakeLLMServer) -> None:
    with pytest.raises(IncompleteStream, match=r"response\.completed"):
        await responses(fake, {"type": "response.created", "response": {}})


async def anthropic(fake: FakeLLMServer, *events: dict[str, Any]) -> Any:
    fake.script(ANY_ROUTE, RawStream(tuple((e["type"], e) for e in events)))
    provider = provider_for("anthropic", fake)
    try:
        return await collect(provider)
    finally:
        await provider.aclose()


async def test_anthropic_usage_is_overwritten_and_redacted_thinking_kept(
    fake: FakeLLMServer,
) -> None:
    usage = {
        "input_tokens": 100,
        "output_tokens": 1,
        "cache_read_input_tokens": 50,
        "cache_creation_input_tokens": 7,
    }
    _, done = await anthropic(
        fake,
        {"type": "message_start", "message": {"usage": usage}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "xyz"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "server_tool_use", "id": "s"},
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "pause_turn"},
            "usage": {"output_tokens": 40},
        },
        {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 42}},
        {"type": "message_stop"},
    )
    assert done.parts == (ThinkingPart("", redacted="xyz"),)
    assert done.stop == "pause_turn"
    assert (done.usage.input_tokens, done.usage.output_tokens) == (100, 42)
    assert (done.usage.cache_read_tokens, done.usage.cache_write_tokens) == (50, 7)


async def test_anthropic_closed_before_message_stop(fake: FakeLLMServer) -> None:
    with pytest.raises(IncompleteStream, match="message_stop"):
        await anthropic(fake, {"type": "message_start", "message": {"usage": {}}})
