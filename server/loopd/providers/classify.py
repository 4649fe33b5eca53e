"""Turn a provider's failure into one class of `loopd.protocol.errors`.

Every format reports errors the same few ways: an HTTP status with a JSON body
(`{"error": {"type"|"code", "message"}}`), or an error event after a 200. One
function classifies both, so the engine's retry decision never depends on which
format the model speaks. Order matters: a quota error arrives as a 429 but waiting
does not help, and an overflow arrives as a plain 400 but needs compaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from loopd.protocol.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    Overloaded,
    ProviderError,
    RateLimited,
    Transient,
)

_OVERFLOW_TEXT = (
    "prompt is too long",  # Anthropic
    "exceed context limit",  # Anthropic, the prompt and `max_tokens` together
    "maximum context length",  # OpenAI, vLLM, LM Studio
    "context window",
    "context_length_exceeded",
    "exceeds the available context size",  # llama.cpp server
    "exceed_context_size",
    "exceeded max context length",  # Ollama
)
_FATAL_KINDS = frozenset({"insufficient_quota", "billing_error", "usage_not_included"})
_AUTH_KINDS = frozenset({"authentication_error", "permission_error", "invalid_api_key"})
_RATE_KINDS = frozenset({"rate_limit_error", "rate_limit_exceeded"})
_OVERLOAD_KINDS = frozenset({"overloaded_error"})
_FATAL_EVENT_KINDS = frozenset({"invalid_request_error", "not_found_error", "request_too_large"})
_TRY_AGAIN = re.compile(r"try again in (\d+(?:\.\d+)?)\s*(ms|s)\b", re.IGNORECASE)


def classify(
    *,
    status: int | None,
    kinds: tuple[str, ...],
    message: str,
    retry_after: float | None = None,
) -> ProviderError:
    """Pick the error class. `status` is None for an error event inside a stream;
    `kinds` are the body's `type` and `code` (whichever the format uses)."""
    kind = next((k for k in kinds if k), "")
    fields: dict[str, Any] = {"status": status, "error_type": kind}
    found = set(kinds)
    text = message.lower()
    label = f"{status} {kind}".strip() if status else kind or "stream error"
    full = f"{label}: {message}" if message else label
    if "context_length_exceeded" in found or any(t in text for t in _OVERFLOW_TEXT):
        return ContextOverflow(full, **fields)
    if found & _FATAL_KINDS:
        return BadRequest(full, **fields)
    if status in (401, 403) or found & _AUTH_KINDS:
        return AuthError(full, **fields)
    if status == 429 or found & _RATE_KINDS:
        return RateLimited(full, retry_after=retry_after or _try_again(message), **fields)
    if status in (503, 529) or found & _OVERLOAD_KINDS:
        return Overloaded(full, **fields)
    if status is None:
        fatal = found & _FATAL_EVENT_KINDS
        return BadRequest(full, **fields) if fatal else Transient(full, **fields)
    if status >= 500 or status in (408, 409):
        return Transient(full, **fields)
    return BadRequest(full, **fields)


def error_from_response(status: int, headers: Mapping[str, str], body: bytes) -> ProviderError:
    """Classify a non-2xx response from its status, headers and (JSON) body."""
    kinds, message = _error_fields(body)
    return classify(
        status=status, kinds=kinds, message=message, retry_after=retry_after_seconds(headers)
    )


def error_from_payload(payload: Mapping[str, Any]) -> ProviderError:
    """Classify an error event that arrived inside a stream after a 200. Accepts the
    event itself (`{"error": {...}}`) or the bare error object (`{"code", "message"}`)."""
    inner = payload.get("error")
    err = inner if isinstance(inner, Mapping) else payload
    kinds = (str(err.get("type") or ""), str(err.get("code") or ""))
    if kinds[0] == "error":  # a Responses `error` event names itself, not the failure
        kinds = (kinds[1], "")
    return classify(status=None, kinds=kinds, message=str(err.get("message") or ""))


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """`retry-after-ms`, then `retry-after` (seconds or an HTTP date)."""
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    seconds = _number(value)
    if seconds is not None or not value:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_fields(body: bytes) -> tuple[tuple[str, ...], str]:
    try:
        data = json.loads(body)
    except ValueError:
        return (), body.decode("utf-8", "replace")[:300]
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, str):
        return (), err
    if not isinstance(err, dict):
        return (), str(data)[:300]
    kinds = (str(err.get("type") or ""), str(err.get("code") or ""))
    return kinds, str(err.get("message") or "")


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _try_again(message: str) -> float | None:
    match = _TRY_AGAIN.search(message)
    if match is None:
        return None
    amount = float(match.group(1))
    return amount / 1000 if match.group(2).lower() == "ms" else amount
