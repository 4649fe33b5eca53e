"""Which models an OpenAI-compatible endpoint serves: `GET {base_url}/models`.

Ollama, vLLM, LM Studio and llama.cpp's server all answer it (`{"data": [{"id": ...}]}`),
so a provider configured without a model list can still offer real model ids instead
of a made-up one. Asking costs a round trip, so `ModelListing` keeps the answer for a
while and never waits longer than its timeout: a session opening against a stopped
server learns "nothing listed" within seconds, and nothing on the protocol's
`initialize` path ever asks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import httpx

from loopd.protocol.errors import NoModel
from loopd.protocol.jsonvalues import loads_bounded
from loopd.protocol.model import ModelRequest, StreamEvent
from loopd.providers.sse import bearer_auth, new_client

log = logging.getLogger(__name__)

LIST_TIMEOUT = 3.0
"""Seconds to wait for a model list: a local server answers in milliseconds, and a
session must not hang on one that is down."""
LIST_TTL = 60.0
"""Seconds a list is reused: long enough that opening sessions does not ask each time,
short enough that a model pulled meanwhile shows up in the next session."""


@dataclass(frozen=True, slots=True)
class Listed:
    """What the endpoint listed (possibly nothing), or why it could not be asked."""

    models: tuple[str, ...] = ()
    problem: str = ""  # "" when the endpoint answered


async def fetch_models(
    base_url: str, api_key: str, *, client: httpx.AsyncClient, within: float = LIST_TIMEOUT
) -> Listed:
    """The ids `GET {base_url}/models` returns, in the server's order. Never raises: a
    failure (down, timeout, an error status, not JSON) comes back as `problem`."""
    url = base_url.rstrip("/") + "/models"
    try:
        response = await client.get(url, headers=bearer_auth(api_key), timeout=within)
    except httpx.HTTPError as exc:
        return Listed(problem=f"{url} did not answer ({type(exc).__name__})")
    if not response.is_success:
        return Listed(problem=f"{url} answered {response.status_code}")
    try:
        data = loads_bounded(response.content).get("data")
        ids = tuple(str(item["id"]) for item in data if isinstance(item, dict) and item.get("id"))
    except (ValueError, AttributeError, TypeError, KeyError):
        return Listed(problem=f"{url} did not answer with a model list")
    return Listed(tuple(dict.fromkeys(ids)))


class ModelListing:
    """One endpoint's model list, asked on first use and kept for `ttl` seconds. Sessions
    opening at once share one request. A failed request is not kept: the next session
    asks again (the server may have started meanwhile)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        client: httpx.AsyncClient | None = None,
        timeout: float = LIST_TIMEOUT,
        ttl: float = LIST_TTL,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url = base_url
        self._api_key = api_key
        self._client = client
        self._timeout = timeout
        self._ttl = ttl
        self._now = now
        self._kept: tuple[float, Listed] | None = None
        self._lock = asyncio.Lock()
        self.last: Listed | None = None
        """The latest answer, kept or not (what a "no model" message explains)."""

    async def get(self) -> Listed:
        async with self._lock:
            if self._kept is not None and self._now() - self._kept[0] < self._ttl:
                return self._kept[1]
            listed = self.last = await self._fetch()
            self._kept = (self._now(), listed) if not listed.problem else None
            if listed.problem:
                log.warning("model list: %s", listed.problem)
            return listed

    async def models(self) -> tuple[str, ...]:
        return (await self.get()).models

    async def _fetch(self) -> Listed:
        if self._client is not None:
            return await fetch_models(
                self.base_url, self._api_key, client=self._client, within=self._timeout
            )
        async with new_client() as client:
            return await fetch_models(
                self.base_url, self._api_key, client=client, within=self._timeout
            )


class NoModelProvider:
    """The provider a session without a model talks to: every request fails with
    `NoModel`, whose message (`explain()`, read when asked) says how to get one. The
    turn then ends with that message instead of sending a made-up model id."""

    def __init__(self, explain: Callable[[], str]) -> None:
        self._explain = explain

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._fail()

    async def _fail(self) -> AsyncIterator[StreamEvent]:
        raise NoModel(self._explain())
        yield  # an async generator, as `Provider.stream` returns
