"""Build a provider by kind, and find one from the usual environment variables.

Deliberately small: which model and provider a session uses is the catalog's
decision; this only knows how each kind is constructed and where its credentials
conventionally live. Providers built here share one `httpx.AsyncClient` when one is
passed in; the caller then closes that client, and `aclose` on a provider closes
only a client the provider made itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol, assert_never
from urllib.parse import urlsplit

import httpx

from loopd.config.load import HOW_TO_CONFIGURE
from loopd.engine.ports import Provider
from loopd.protocol.errors import MissingCredentials
from loopd.providers import anthropic, openai_chat
from loopd.providers.anthropic import AnthropicProvider
from loopd.providers.openai_chat import OpenAIChatProvider
from loopd.providers.openai_responses import OpenAIResponsesProvider
from loopd.providers.sse import DEFAULT_IDLE_TIMEOUT

ProviderKind = Literal["anthropic", "openai_chat", "openai_responses"]
_OLLAMA_PORT = 11434


class ClosableProvider(Provider, Protocol):
    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a provider kind is reached and with which key ("" for none: a keyless
    server is sent no auth header)."""

    kind: ProviderKind
    base_url: str
    api_key: str


def make_provider(
    kind: ProviderKind,
    *,
    base_url: str | None = None,
    api_key: str,
    client: httpx.AsyncClient | None = None,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    anthropic_version: str = anthropic.DEFAULT_VERSION,
) -> ClosableProvider:
    match kind:
        case "anthropic":
            return AnthropicProvider(
                api_key=api_key,
                base_url=base_url or anthropic.DEFAULT_BASE_URL,
                version=anthropic_version,
                client=client,
                idle_timeout=idle_timeout,
            )
        case "openai_chat" | "openai_responses":
            openai = OpenAIChatProvider if kind == "openai_chat" else OpenAIResponsesProvider
            return openai(
                api_key=api_key,
                base_url=base_url or openai_chat.DEFAULT_BASE_URL,
                client=client,
                idle_timeout=idle_timeout,
            )
        case _:
            assert_never(kind)


def endpoint_from_env(env: Mapping[str, str], kind: ProviderKind | None = None) -> Endpoint:
    """The endpoint for `kind` (or the first configured one: Anthropic, OpenAI, then
    Ollama) from environment variables. Raises `MissingCredentials` naming the
    variables to set. A base URL without a key is accepted: local servers and test
    fakes need none, and a gateway that does will answer 401 (an `AuthError`)."""
    kinds: tuple[ProviderKind, ...] = (kind,) if kind else ("anthropic", "openai_chat")
    for candidate in kinds:
        found = _from_env(env, candidate)
        if found is not None:
            return found
    raise MissingCredentials(f"no model provider configured: {HOW_TO_CONFIGURE}")


def provider_from_env(
    env: Mapping[str, str],
    kind: ProviderKind | None = None,
    *,
    client: httpx.AsyncClient | None = None,
) -> ClosableProvider:
    endpoint = endpoint_from_env(env, kind)
    return make_provider(
        endpoint.kind, base_url=endpoint.base_url, api_key=endpoint.api_key, client=client
    )


def _from_env(env: Mapping[str, str], kind: ProviderKind) -> Endpoint | None:
    if kind == "anthropic":
        key, url = env.get("ANTHROPIC_API_KEY"), env.get("ANTHROPIC_BASE_URL")
        default = anthropic.DEFAULT_BASE_URL
    else:
        key, url = env.get("OPENAI_API_KEY"), env.get("OPENAI_BASE_URL")
        default = openai_chat.DEFAULT_BASE_URL
        if not (key or url) and kind == "openai_chat" and env.get("OLLAMA_HOST"):
            url = ollama_base_url(env["OLLAMA_HOST"])
    if not (key or url):
        return None
    return Endpoint(kind, url or default, key or "")  # "": no auth header is sent


def ollama_base_url(host: str) -> str:
    """`OLLAMA_HOST` as Ollama reads it (`host`, `host:port` or a URL; `0.0.0.0`
    means this machine) turned into its OpenAI-compatible base URL."""
    parts = urlsplit(host if "://" in host else f"http://{host}")
    hostname = parts.hostname or "127.0.0.1"
    hostname = "127.0.0.1" if hostname == "0.0.0.0" else hostname
    return f"{parts.scheme}://{hostname}:{parts.port or _OLLAMA_PORT}/v1"
