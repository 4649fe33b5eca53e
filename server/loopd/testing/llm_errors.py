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
