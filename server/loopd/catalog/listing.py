"""Models a native entry offers when its config lists none: what its endpoint lists.

An OpenAI-compatible provider found from `OPENAI_BASE_URL` or `OLLAMA_HOST`, or
configured without `models = [...]`, has no model loopd could name. Its endpoint
does know (`GET /v1/models`, see `loopd.providers.models`), so sessions and
`loopd catalog` ask it, and when it lists nothing they say how to fix that rather
than send a made-up model id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from loopd.catalog.catalog import RuntimeCatalog
from loopd.catalog.entry import RuntimeEntry, public_url
from loopd.config.schema import Harness, ProviderKind
from loopd.providers.models import Listed, ModelListing


def lists_models(entry: RuntimeEntry) -> bool:
    """Whether the entry's models come from its endpoint: a native OpenAI-compatible
    entry with no model configured (Anthropic entries always have built-in ones)."""
    provider = entry.provider
    return (
        entry.harness is Harness.NATIVE
        and not entry.models
        and provider is not None
        and provider.kind is not ProviderKind.ANTHROPIC
    )


def listing_for(entry: RuntimeEntry, env: Mapping[str, str]) -> ModelListing:
    provider = entry.provider
    assert provider is not None, "only native entries list models"
    key = env.get(provider.api_key_env, "") if provider.api_key_env else ""
    return ModelListing(provider.base_url, key)


def no_model_help(entry: RuntimeEntry, listed: Listed | None) -> str:
    """What the person is told when a session of `entry` has no model to ask."""
    url = public_url(entry.provider.base_url if entry.provider else "") + "/models"
    why = listed.problem if listed is not None and listed.problem else f"{url} lists none"
    return (
        f"runtime {entry.name!r} has no model: none is configured and {why}. Load or pull "
        "a model on that server (for Ollama: `ollama pull qwen3-coder`) and start a new "
        f'session, or name the models in config.toml: models = ["..."] under '
        f"[providers.{entry.name}] (with its kind and base_url)"
    )


async def listed_models(catalog: RuntimeCatalog, env: Mapping[str, str]) -> dict[str, Listed]:
    """What each entry that `lists_models` is served, asked of all endpoints at once."""
    entries = [e for e in catalog if lists_models(e)]
    found = await asyncio.gather(*(listing_for(e, env).get() for e in entries))
    return {e.name: listed for e, listed in zip(entries, found, strict=True)}
