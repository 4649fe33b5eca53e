"""What each provider sends: headers, body shape, history translation."""

from __future__ import annotations

import json

from providers_support import READ, REQUEST, collect, provider_for

from loopd.protocol.messages import (
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
    user_text,
)
from loopd.protocol.model import ModelRequest, ToolSpec
from loopd.providers import AnthropicProvider
from loopd.testing.fake_llm import ANY_ROUTE, FakeLLMServer, Reply

GREP = ToolSpec("grep", "Search", {"type": "object"})
HISTORY = (
    Message("user", (TextPart("Fix it"), ImagePart("image/png", "iVBOR"))),
    Message(
        "assistant",
        (
            ThinkingPart("Look first.", signature="sig-A"),
            ThinkingPart("", redacted="opaque"),
            ThinkingPart("unsigned, from another provider"),
            TextPart("Reading."),
            ToolUsePart("t1", "read", {"path": "a.py"}),
        ),
    ),
    Message(
        "user", (ToolResultPart("t1", "print(1)"), ToolResultPart("t2", "boom", is_error=True))
    ),
)
TOOL_LOOP = ModelRequest(
    "m", "Be brief.", HISTORY, tools=(READ, GREP), max_tokens=8192, thinking="medium"
)


async def sent(
    fake: FakeLLMServer, kind: str, request: ModelRequest = TOOL_LOOP
) -> tuple[dict[str, str], dict]:
    fake.script(ANY_ROUTE, Reply(text="ok"))
    provider = provider_for(kind, fake)  # type: ignore[arg-type]
    await collect(provider, request)
    await provider.aclose()
    recorded = fake.requests[-1]
    return recorded.headers, recorded.body


async def test_anthropic_headers(fake: FakeLLMServer) -> None:
    headers, body = await sent(fake, "anthropic")
    assert headers["x-api-key"] == "sk-test"
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    assert body["stream"] is True
    assert fake.requests[-1].path == "/v1/messages"


async def test_anthropic_version_and_bearer_are_configurable(fake: FakeLLMServer) -> None:
    fake.script(ANY_ROUTE, Reply(text="ok"))
    provider = AnthropicProvider(
        api_key="k", base_url=fake.base_url, version="2026-10-21", bearer=True
    )
    await collect(provider)
    await provider.aclose()
    headers = fake.requests[-1].headers
    assert (headers["anthropic-version"], headers["authorization"]) == ("2026-10-21", "Bearer k")
    assert "x-api-key" not in headers


async def test_anthropic_cache_breakpoints(fake: FakeLLMServer) -> None:
    _, body = await sent(fake, "anthropic")
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["tools"][0]
    assert body["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    last_user = body["messages"][-1]
    assert last_user["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert json.dumps(body).count("cache_control") <= 4
    assert "cache_control" not in json.dumps(body["messages"][:-1])


async def test_anthropic_tool_loop_history(fake: FakeLLMServer) -> None:
    _, body = await sent(fake, "anthropic")
    first, assistant, results = body["messages"]
    assert first["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"},
    }
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "Look first.", "signature": "sig-A"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}},
    ]
    assert [{k: v for k, v in r.items() if k != "cache_control"} for r in results["content"]] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "print(1)", "is_error": False},
        {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": True},
    ]


async def test_anthropic_thinking_budget_and_no_sampling_params(fake: FakeLLMServer) -> None:
    _, body = await sent(fake, "anthropic")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert not {"temperature", "top_p", "top_k"} & set(body)
    _, plain = await sent(fake, "anthropic", REQUEST)
    assert "thinking" not in plain


async def test_chat_body(fake: FakeLLMServer) -> None:
    headers, body = await sent(fake, "openai_chat")
    assert headers["authorization"] == "Bearer sk-test"
    assert fake.requests[-1].path == "/v1/chat/completions"
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 8192
    assert body["reasoning_effort"] == "medium"
    assert body["tools"][0] == {
        "type": "function",
        "function": {"name": "read", "description": "Read a file", "parameters": READ.input_schema},
    }
    system, user, assistant, tool1, tool2 = body["messages"]
    assert system == {"role": "system", "content": "Be brief."}
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBOR"},
    }
    assert assistant["content"] == "Reading."
    (call,) = assistant["tool_calls"]
    assert call["id"] == "t1"
    assert json.loads(call["function"]["arguments"]) == {"path": "a.py"}
    assert tool1 == {"role": "tool", "tool_call_id": "t1", "content": "print(1)"}
    assert tool2["tool_call_id"] == "t2"


async def test_chat_plain_user_text_is_a_string(fake: FakeLLMServer) -> None:
    _, body = await sent(fake, "openai_chat", ModelRequest("m", "", (user_text("hi"),)))
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert "tools" not in body


async def test_responses_body(fake: FakeLLMServer) -> None:
    headers, body = await sent(fake, "openai_responses")
    assert headers["authorization"] == "Bearer sk-test"
    assert fake.requests[-1].path == "/v1/responses"
    assert (body["instructions"], body["store"], body["max_output_tokens"]) == (
        "Be brief.",
        False,
        8192,
    )
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["tools"][0]["name"] == "read"
    user, reasoning, text, call, out1, out2 = body["input"]
    assert user["content"][1] == {"type": "input_image", "image_url": "data:image/png;base64,iVBOR"}
    assert reasoning == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Look first."}],
        "encrypted_content": "sig-A",
    }
    assert text == {"role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]}
    assert call == {
        "type": "function_call",
        "call_id": "t1",
        "name": "read",
        "arguments": '{"path": "a.py"}',
    }
    assert out1 == {"type": "function_call_output", "call_id": "t1", "output": "print(1)"}
    assert out2["call_id"] == "t2"


PICTURE = ModelRequest(
    "m",
    "",
    (
        HISTORY[1],
        Message(
            "user", (ToolResultPart("t1", "a dot", images=(ImagePart("image/png", "iVBOR"),)),)
        ),
    ),
)


async def test_a_tool_results_images_reach_each_wire_format(fake: FakeLLMServer) -> None:
    image_url = "data:image/png;base64,iVBOR"
    _, anthropic = await sent(fake, "anthropic", PICTURE)
    (result,) = anthropic["messages"][-1]["content"]
    assert result["content"] == [
        {"type": "text", "text": "a dot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
    ]
    _, chat = await sent(fake, "openai_chat", PICTURE)
    tool, user = chat["messages"][-2:]
    assert tool == {"role": "tool", "tool_call_id": "t1", "content": "a dot"}
    assert user == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The images the tool call t1 returned:"},
            {"type": "image_url", "image_url": {"url": image_url}},
        ],
    }
    _, responses = await sent(fake, "openai_responses", PICTURE)
    assert responses["input"][-1] == {
        "type": "function_call_output",
        "call_id": "t1",
        "output": [
            {"type": "input_text", "text": "a dot"},
            {"type": "input_image", "image_url": image_url},
        ],
    }
