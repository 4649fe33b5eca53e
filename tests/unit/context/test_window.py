"""The window a model has: the catalogue's, or the one an overflow error named, in
each endpoint's own words; and what a request costs where the price is known."""

from __future__ import annotations

import pytest

from loopd.context.window import (
    DEFAULT_WINDOW,
    MIN_LEARNED,
    Overflow,
    cost_usd,
    effective_window,
    learn_window,
    parse_overflow,
)
from loopd.protocol.errors import ContextOverflow
from loopd.providers.classify import classify, error_from_response

MESSAGES = {
    "anthropic": (
        "prompt is too long: 208310 tokens > 200000 maximum",
        Overflow(limit=200_000, prompt=208_310),
    ),
    "openai": (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130512 tokens. Please reduce the length of the messages.",
        Overflow(limit=128_000, prompt=130_512),
    ),
    "vllm": (
        "This model's maximum context length is 32768 tokens. However, you requested "
        "33000 tokens (32000 in the messages, 1000 in the completion).",
        Overflow(limit=32_768, prompt=32_000),  # the prompt, not what it asked for
    ),
    "anthropic, with the output": (
        "input length and `max_tokens` exceed context limit: 2144 + 8192 > 10000, "
        "decrease input length or `max_tokens` and try again",
        Overflow(limit=10_000, prompt=2_144),
    ),
    "llama.cpp": (
        "the request exceeds the available context size (4096 tokens), try increasing it",
        Overflow(limit=4_096),
    ),
    "ollama": (
        "prompt too long; exceeded max context length by 412 tokens",
        Overflow(excess=412),
    ),
    "no figure": ("context window exceeded", Overflow()),
}


@pytest.mark.parametrize(("message", "expected"), MESSAGES.values(), ids=MESSAGES.keys())
def test_each_endpoints_overflow_is_read(message: str, expected: Overflow) -> None:
    assert parse_overflow(message) == expected
    assert isinstance(classify(status=400, kinds=(), message=message), ContextOverflow)


def test_llama_cpp_names_its_context_in_the_error_body() -> None:
    body = (
        b'{"error":{"code":400,"message":"the request exceeds the available context size '
        b'(8192 tokens), try increasing it","type":"exceed_context_size_error",'
        b'"n_prompt_tokens":9001,"n_ctx":8192}}'
    )
    err = error_from_response(400, {}, body)
    assert isinstance(err, ContextOverflow)
    assert parse_overflow(err.message).limit == 8_192


def test_the_learned_window_is_the_named_one_or_what_was_sent_less_the_excess() -> None:
    assert learn_window(Overflow(limit=20_000), 200_000, 25_000) == 20_000
    assert learn_window(Overflow(excess=412), 200_000, 8_604) == 8_192
    assert learn_window(Overflow(), 200_000, 10_000) == 9_000
    assert learn_window(Overflow(limit=300_000), 200_000, 1) == 200_000, "never grows"
    assert learn_window(Overflow(limit=12), 200_000, 1) == MIN_LEARNED, "never absurd"


def test_the_effective_window_is_the_smallest_known() -> None:
    assert effective_window("claude-sonnet-4-5", None) == 200_000
    assert effective_window("claude-sonnet-4-5", 150_000) == 150_000
    assert effective_window("gpt-4o-mini", None) == 128_000
    assert effective_window("qwen2.5-coder:7b", None) == DEFAULT_WINDOW
    assert effective_window("qwen2.5-coder:7b", 32_768) == 32_768
    assert effective_window("qwen2.5-coder:7b", None, configured=16_384) == 16_384
    assert effective_window("claude-sonnet-4-5", 150_000, configured=100_000) == 100_000


def test_cost_where_the_price_is_known() -> None:
    assert cost_usd("claude-sonnet-4-5", 1_000_000, 0, 0, 0) == pytest.approx(3.0)
    assert cost_usd("claude-sonnet-4-5", 0, 1_000_000, 1_000_000, 0) == pytest.approx(15.3)
    assert cost_usd("qwen2.5-coder:7b", 1_000, 1_000, 0, 0) is None
