"""How many tokens a model can take, and what a request costs.

The effective window is the smallest figure anything knows (after the seed's
`EffectiveContextWindow`): the catalogue's for a known model, or one learned from an
overflow error, which is the serving host's own word that it serves less. A learned
figure is kept per model in the store, so the next session already knows it. Both
the compaction threshold and the `usage_update` size read this one value, so what an
editor's meter shows and when the engine compacts cannot drift apart.

An overflow error names the limit in each endpoint's own words; `parse_overflow`
reads the ones loopd speaks to: Anthropic, OpenAI (and vLLM, LM Studio, which copy
its text), llama.cpp's server and Ollama.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_WINDOW = 200_000
"""For a model no catalogue entry and no overflow has described yet."""
MIN_LEARNED = 1_024
"""No endpoint serves less; a guess below it is a misreading, not a window."""


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What the catalogue knows of a model family: its window, and its price in USD
    per million tokens (None when unknown: no cost is then reported)."""

    window: int
    input_price: float | None = None
    output_price: float | None = None
    cache_read_price: float | None = None
    cache_write_price: float | None = None


# Longest prefix wins. Prices are list prices per million tokens.
KNOWN_MODELS: dict[str, ModelFacts] = {
    "claude-opus-4": ModelFacts(200_000, 15.0, 75.0, 1.5, 18.75),
    "claude-sonnet-4": ModelFacts(200_000, 3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4": ModelFacts(200_000, 1.0, 5.0, 0.1, 1.25),
    "claude-3-5-haiku": ModelFacts(200_000, 0.8, 4.0, 0.08, 1.0),
    "claude-": ModelFacts(200_000),
    "gpt-5-mini": ModelFacts(400_000, 0.25, 2.0, 0.025, None),
    "gpt-5-nano": ModelFacts(400_000, 0.05, 0.4, 0.005, None),
    "gpt-5": ModelFacts(400_000, 1.25, 10.0, 0.125, None),
    "gpt-4.1": ModelFacts(1_047_576, 2.0, 8.0, 0.5, None),
    "gpt-4o-mini": ModelFacts(128_000, 0.15, 0.6, 0.075, None),
    "gpt-4o": ModelFacts(128_000, 2.5, 10.0, 1.25, None),
    "o3": ModelFacts(200_000, 2.0, 8.0, 0.5, None),
    "o4-mini": ModelFacts(200_000, 1.1, 4.4, 0.275, None),
}


def model_facts(model: str) -> ModelFacts | None:
    """The catalogue's facts for `model` (by longest matching prefix), or None."""
    best = ""
    for prefix in KNOWN_MODELS:
        if model.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return KNOWN_MODELS.get(best) if best else None


def effective_window(
    model: str,
    learned: int | None,
    fallback: int = DEFAULT_WINDOW,
    configured: int | None = None,
) -> int:
    """The smallest figure known for `model`: the configured one (the person's
    catalog), loopd's own catalogue's and the learned one; `fallback` when none
    exists."""
    facts = model_facts(model)
    known = [w for w in (configured, facts.window if facts else None, learned) if w]
    return min(known) if known else fallback


def cost_usd(
    model: str, input_tokens: int, output_tokens: int, cache_read: int, cache_write: int
) -> float | None:
    """What one request cost, or None when the model's price is not known."""
    facts = model_facts(model)
    if facts is None or facts.input_price is None or facts.output_price is None:
        return None
    read = facts.cache_read_price if facts.cache_read_price is not None else facts.input_price
    write = facts.cache_write_price if facts.cache_write_price is not None else facts.input_price
    total = (
        input_tokens * facts.input_price
        + output_tokens * facts.output_price
        + cache_read * read
        + cache_write * write
    )
    return total / 1_000_000


@dataclass(frozen=True, slots=True)
class Overflow:
    """What an overflow error said: the window (`limit`) and what the prompt came to
    (`prompt`), each None when the endpoint did not say."""

    limit: int | None = None
    prompt: int | None = None
    excess: int | None = None


_NUM = r"(\d[\d,]*)"
# Anthropic names the prompt first: "prompt is too long: 208310 tokens > 200000
# maximum", and with the output asked for: "input length and `max_tokens` exceed
# context limit: 2144 + 8192 > 10000".
_PROMPT_FIRST = (
    re.compile(rf"{_NUM}\s*tokens?\s*>\s*{_NUM}\s*maximum", re.IGNORECASE),
    re.compile(rf"context limit: {_NUM}\s*\+\s*\d[\d,]*\s*>\s*{_NUM}", re.IGNORECASE),
)
_LIMITS = (
    # OpenAI, vLLM, LM Studio: "maximum context length is 8192 tokens. However, you
    # requested 9000 tokens (8000 in the messages, 1000 in the completion)" /
    # "... your messages resulted in 9000 tokens"
    re.compile(
        rf"maximum context length is {_NUM} tokens?.*?(?:requested|resulted in) {_NUM}",
        re.IGNORECASE | re.DOTALL,
    ),
    re.compile(rf"maximum context length is {_NUM}", re.IGNORECASE),
    # llama.cpp server: "the request exceeds the available context size (4096
    # tokens), try increasing it" (with n_prompt_tokens / n_ctx in newer builds)
    re.compile(rf"available context size \({_NUM} tokens?\)", re.IGNORECASE),
    re.compile(rf"context (?:window|length|size) of {_NUM}", re.IGNORECASE),
    re.compile(rf"n_ctx\W+{_NUM}", re.IGNORECASE),
)
# Ollama: "prompt too long; exceeded max context length by 412 tokens"
_EXCESS = re.compile(rf"exceeded max context length by {_NUM}", re.IGNORECASE)
_PROMPT = re.compile(rf"n_prompt_tokens\W+{_NUM}", re.IGNORECASE)
# OpenAI's "requested" counts the output asked for too: "you requested 10332 tokens
# (2140 in the messages, 8192 in the completion)"; the prompt is the messages' part.
_MESSAGES = re.compile(rf"\({_NUM} in the messages", re.IGNORECASE)


def parse_overflow(message: str) -> Overflow:
    """The figures an overflow error's text gives. Anthropic's patterns name the
    prompt before the limit; OpenAI's names the limit first. `prompt` is the prompt
    alone, never the output the request asked for beside it."""
    for pattern in _PROMPT_FIRST:
        if (first := pattern.search(message)) is not None:
            return Overflow(limit=_int(first.group(2)), prompt=_int(first.group(1)))
    second = _LIMITS[0].search(message)
    if second is not None:
        messages = _MESSAGES.search(message)
        prompt = messages.group(1) if messages else second.group(2)
        return Overflow(limit=_int(second.group(1)), prompt=_int(prompt))
    prompt = _PROMPT.search(message)
    for pattern in _LIMITS[1:]:
        found = pattern.search(message)
        if found is not None:
            return Overflow(_int(found.group(1)), _int(prompt.group(1)) if prompt else None)
    excess = _EXCESS.search(message)
    return Overflow(excess=_int(excess.group(1)) if excess else None)


def learn_window(overflow: Overflow, window: int, sent_estimate: int) -> int:
    """The window to use after an overflow: the figure the endpoint named, or, when it
    named only the excess (Ollama) or nothing, what was sent less the excess (or less a
    tenth), never more than the window already in use."""
    if overflow.limit:
        return min(window, max(MIN_LEARNED, overflow.limit))
    if overflow.excess:
        return min(window, max(MIN_LEARNED, sent_estimate - overflow.excess))
    return min(window, max(MIN_LEARNED, int(sent_estimate * 0.9)))


def _int(text: str) -> int:
    return int(text.replace(",", ""))
