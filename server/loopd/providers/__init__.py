"""Model providers on httpx + httpx-sse: Anthropic Messages, OpenAI Chat Completions
(and every OpenAI-compatible local server), OpenAI Responses. Each implements the
engine's `Provider` port and raises only `loopd.protocol.errors.ProviderError`s; none
retries (the engine does, through its clock)."""

from loopd.providers.anthropic import AnthropicProvider
from loopd.providers.factory import (
    ClosableProvider,
    Endpoint,
    ProviderKind,
    endpoint_from_env,
    make_provider,
    provider_from_env,
)
from loopd.providers.openai_chat import OpenAIChatProvider
from loopd.providers.openai_responses import OpenAIResponsesProvider
from loopd.providers.sse import new_client

__all__ = [
    "AnthropicProvider",
    "ClosableProvider",
    "Endpoint",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "ProviderKind",
    "endpoint_from_env",
    "make_provider",
    "new_client",
    "provider_from_env",
]
