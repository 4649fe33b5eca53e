"""The endpoint's model list: `GET /v1/models`, the cheapest request that proves a key.

Anthropic, OpenAI, and the OpenAI-compatible servers people run (Ollama, vLLM,
llama.cpp, LM Studio) all serve it, with the same `{"data": [{"id": ...}]}` shape.
A failure is one of the provider error classes (`AuthError` for a refused key, a
`Transient` for an endpoint that cannot be reached), so callers word it like any
other provider failure; `NoModelList` is a 404, a gateway that serves models but
does not list them (the key is then not refused, only unchecked).
"""

from __future__ import annotations

import httpx

from loopd.protocol.errors import ProviderError, Transient
from loopd.protocol.jsonvalues import loads_bounded
from loopd.providers import anthropic
from loopd.providers.classify import error_from_response
from loopd.providers.factory import ProviderKind

LIST_TIMEOUT = 10.0


class NoModelList(ProviderError):
    """The endpoint answered 404 for its model list: it has none to give."""


def models_url(kind: ProviderKind, base_url: str) -> str:
    base = base_url.rstrip("/")
    return f"{base}/v1/models" if kind == "anthropic" else f"{base}/models"


def auth_headers(kind: ProviderKind, api_key: str) -> dict[str, str]:
    """What the endpoint wants to see; no key means no header (a keyless local
    server must not be sent an empty bearer token)."""
    if kind == "anthropic":
        headers = {"anthropic-version": anthropic.DEFAULT_VERSION}
        return headers | ({"x-api-key": api_key} if api_key else {})
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


def list_models(
    kind: ProviderKind, base_url: str, api_key: str, timeout: float = LIST_TIMEOUT
) -> tuple[str, ...]:
    """The model ids the endpoint lists, in its order. Raises `ProviderError`."""
    url = models_url(kind, base_url)
    try:
        response = httpx.get(url, headers=auth_headers(kind, api_key), timeout=timeout)
    except httpx.HTTPError as err:
        raise Transient(f"{url} cannot be reached: {err}") from err
    if response.status_code == 404:
        raise NoModelList(f"{url} answered 404: the server has no model list", status=404)
    if response.status_code != 200:
        raise error_from_response(response.status_code, response.headers, response.content)
    try:
        data = loads_bounded(response.content)["data"]
        return tuple(str(item["id"]) for item in data)
    except (ValueError, KeyError, TypeError) as err:
        raise ProviderError(f"{url} did not answer with a model list") from err
