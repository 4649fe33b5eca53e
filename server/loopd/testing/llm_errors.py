"""How each scripted failure looks on the wire, per format: the error type, code,
status and message the real services send (OpenAI has no 529; it answers 503)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loopd.testing.llm_script import ErrorKind


@dataclass(frozen=True, slots=True)
class ErrorShape:
    """How one kind of failure looks in each format."""

    anthropic_type: str
    anthropic_status: int
    openai_type: str
    openai_code: str | None
    openai_status: int
    message: str
    openai_message: str = ""


ERRORS: Mapping[ErrorKind, ErrorShape] = {
    "rate_limited": ErrorShape(
        "rate_limit_error", 429, "requests", "rate_limit_exceeded", 429, "Rate limit reached"
    ),
    "overloaded": ErrorShape("overloaded_error", 529, "overloaded_error", None, 503, "Overloaded"),
    "server_error": ErrorShape("api_error", 500, "server_error", "server_error", 500, "Internal"),
    "context_overflow": ErrorShape(
        "invalid_request_error",
        400,
        "invalid_request_error",
        "context_length_exceeded",
        400,
        "prompt is too long: 210000 tokens > 200000 maximum",
        "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 8227 tokens. Please reduce the length of the messages.",
    ),
    "auth": ErrorShape(
        "authentication_error", 401, "invalid_request_error", "invalid_api_key", 401, "Bad key"
    ),
    "bad_request": ErrorShape(
        "invalid_request_error", 400, "invalid_request_error", None, 400, "Invalid request"
    ),
}


def overflow_message(anthropic: bool, prompt: int, window: int, output: int | None) -> str:
    """The overflow message the real service sends (Anthropic's, or else OpenAI's,
    which vLLM and LM Studio copy) for a prompt of `prompt` tokens against a
    `window`; with `output`, the output the request asked for was held against the
    window too, and the message names both."""
    if anthropic:
        if output is None:
            return f"prompt is too long: {prompt} tokens > {window} maximum"
        return (
            f"input length and `max_tokens` exceed context limit: {prompt} + {output} > "
            f"{window}, decrease input length or `max_tokens` and try again"
        )
    if output is None:
        return (
            f"This model's maximum context length is {window} tokens. However, your "
            f"messages resulted in {prompt} tokens. Please reduce the length of the messages."
        )
    return (
        f"This model's maximum context length is {window} tokens. However, you requested "
        f"{prompt + output} tokens ({prompt} in the messages, {output} in the completion). "
        "Please reduce the length of the messages or completion."
    )
