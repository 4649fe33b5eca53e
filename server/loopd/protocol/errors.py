"""One error tree for loopd. Callers branch on the class and the fields, never on text.

    LoopdError
    ├── ProviderError            the model endpoint failed; `retryable` says what to do
    │   ├── ContextOverflow      the prompt is too long: compact, never resend as is
    │   ├── RateLimited          429; `retry_after` seconds when the server said so
    │   ├── Overloaded           529 / overloaded_error (also mid-stream)
    │   ├── Transient            5xx, connection reset, timeouts
    │   │   └── StreamStalled    no data for the idle timeout: retried fewer times
    │   ├── IncompleteStream     the stream closed before its terminal event
    │   ├── AuthError            401/403: fatal, shown to the person
    │   ├── BadRequest           4xx that resending will not fix
    │   ├── MissingCredentials   no key configured; names the variables to set
    │   └── NoModel              none configured and the endpoint lists none; says how
    ├── ToolInputError           the model's tool arguments are invalid
    │   └── ToolUnusable         the call cannot even be looked at (a FIFO, a path swapped)
    ├── ConfigError              a config file or option is wrong
    └── RuntimeFailure           a runtime (engine or foreign CLI) could not run a turn

Mapping to JSON-RPC codes happens only in the protocol adapters.
"""

from __future__ import annotations


class LoopdError(Exception):
    """Root of every error loopd raises on purpose."""


class ProviderError(LoopdError):
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
        self.retry_after = retry_after


class ContextOverflow(ProviderError):
    pass


class RateLimited(ProviderError):
    retryable = True


class Overloaded(ProviderError):
    retryable = True


class Transient(ProviderError):
    retryable = True


class StreamStalled(Transient):
    """The model sent nothing for `idle_seconds` (before the reply or within it). A
    stalled server rarely recovers within seconds, and each attempt costs the whole
    idle timeout, so the engine retries a stall fewer times than other failures and
    says so each time."""

    def __init__(self, message: str, *, idle_seconds: float) -> None:
        super().__init__(message)
        self.idle_seconds = idle_seconds


class IncompleteStream(ProviderError):
    retryable = True


class AuthError(ProviderError):
    pass


class BadRequest(ProviderError):
    pass


class MissingCredentials(ProviderError):
    pass


class NoModel(ProviderError):
    pass


class ToolInputError(LoopdError):
    """Raised by a tool for arguments it cannot use. Becomes a tool result the model
    reads, never an exception that ends the turn."""


class ToolUnusable(ToolInputError):
    """Declaring the call failed for a reason other than its arguments' shape: the
    message says why, for the model, as the call's result."""


class ConfigError(LoopdError):
    pass


class RuntimeFailure(LoopdError):
    pass
