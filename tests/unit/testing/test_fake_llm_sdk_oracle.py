"""The official SDKs (dev-only) parse the fake's streams: the fake speaks the real
formats, so passing tests against it mean something."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import pytest

from loopd.testing.fake_llm import ANY_ROUTE, FakeLLMServer, Reply, ScriptedCall

REPLY = Reply(
    thinking="Look first.",
    signature="sig-1",
    text="Reading both.",
    tool_calls=(
        ScriptedCall("read", {"path": "a.py"}, id="c1"),
        ScriptedCall("grep", {"q": "x"}, id="c2"),
    ),
    input_tokens=40,
    output_tokens=9,
)
DELIVERIES = [{}, {"chunk": 1, "pings": True}]
TOOL = {"name": "read", "description": "Read", "input_schema": {"type": "object"}}


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.mark.parametrize("delivery", DELIVERIES, ids=["whole", "1-byte+pings"])
async def test_anthropic_sdk_final_message(
    fake: FakeLLMServer, delivery: dict[str, object]
) -> None:
    fake.script(ANY_ROUTE, _with(delivery))
    client = anthropic.AsyncAnthropic(api_key="k", base_url=fake.base_url, max_retries=0)
    async with client.messages.stream(
        model="m",
        max_tokens=1024,
        messages=[{"role": "user", "content": "hi"}],
        tools=[TOOL],  # type: ignore[list-item]
    ) as stream:
        final = await stream.get_final_message()
    await client.close()
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use", "tool_use"]
    thinking, text, first, second = final.content
    assert (thinking.thinking, thinking.signature) == ("Look first.", "sig-1")  # type: ignore[union-attr]
    assert text.text == "Reading both."  # type: ignore[union-attr]
    assert (first.id, first.input, second.input) == ("c1", {"path": "a.py"}, {"q": "x"})  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (40, 9)


@pytest.mark.parametrize("delivery", DELIVERIES, ids=["whole", "1-byte+pings"])
async def test_openai_sdk_chat_stream(fake: FakeLLMServer, delivery: dict[str, object]) -> None:
    fake.script(ANY_ROUTE, _with(delivery))
    client = openai.AsyncOpenAI(api_key="k", base_url=fake.openai_base_url, max_retries=0)
    stream = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, args, finish, usage = "", {0: "", 1: ""}, None, None
    async for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for call in choice.delta.tool_calls or ():
                args[call.index] += (call.function.arguments if call.function else "") or ""
    await client.close()
    assert text == "Reading both."
    assert args == {0: '{"path": "a.py"}', 1: '{"q": "x"}'}
    assert finish == "tool_calls"
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (40, 9)


@pytest.mark.parametrize("delivery", DELIVERIES, ids=["whole", "1-byte+pings"])
async def test_openai_sdk_responses_stream(
    fake: FakeLLMServer, delivery: dict[str, object]
) -> None:
    fake.script(ANY_ROUTE, _with(delivery))
    client = openai.AsyncOpenAI(api_key="k", base_url=fake.openai_base_url, max_retries=0)
    stream = await client.responses.create(model="m", input="hi", stream=True)
    events = [event async for event in stream]
    await client.close()
    assert all(type(e).__name__ != "BaseModel" for e in events)
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    final = events[-1]
    assert final.type == "response.completed"
    output = final.response.output  # type: ignore[union-attr]
    assert [item.type for item in output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    assert output[1].content[0].text == "Reading both."  # type: ignore[union-attr]
    assert [(o.call_id, o.arguments) for o in output[2:]] == [
        ("c1", '{"path": "a.py"}'),
        ("c2", '{"q": "x"}'),
    ]  # type: ignore[union-attr]
    assert final.response.usage.output_tokens == 9  # type: ignore[union-attr]


async def test_sdks_raise_on_the_mid_stream_error(fake: FakeLLMServer) -> None:
    fake.script(
        ANY_ROUTE,
        Reply(text="Partial", fail="overloaded"),
        Reply(text="Partial", fail="overloaded"),
    )
    sdk = anthropic.AsyncAnthropic(api_key="k", base_url=fake.base_url, max_retries=0)
    with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
        async with sdk.messages.stream(
            model="m", max_tokens=9, messages=[{"role": "user", "content": "hi"}]
        ) as s:
            await s.get_final_message()
    await sdk.close()
    oai = openai.AsyncOpenAI(api_key="k", base_url=fake.openai_base_url, max_retries=0)
    with pytest.raises(openai.APIError):
        async for _ in await oai.chat.completions.create(model="m", messages=[], stream=True):
            pass
    await oai.close()


def _with(delivery: dict[str, object]) -> Reply:
    from dataclasses import replace

    return replace(REPLY, **delivery)  # type: ignore[arg-type]
