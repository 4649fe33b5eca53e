"""Build the catalog from the config, the environment and what is installed.

Pure: looking a command up (`which`) and asking its version (`version_of`) are
injected, so the same code runs against a fake machine in tests and against the real
one through `loopd.catalog.discovery`.

Where entries come from, and their names:
- native, one per provider: every `[providers.<name>]`, plus the providers the
  environment reveals unless a configured provider already uses the name:
  `anthropic` (ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL), `openai` (OPENAI_API_KEY or
  OPENAI_BASE_URL; `openai_responses` against api.openai.com, `openai_chat` against
  any other base URL, since compatible servers rarely speak Responses) and `ollama`
  (OLLAMA_HOST, as `openai_chat` at `<host>/v1`).
- every `[runtimes.<name>]`; a native one names a provider from the list above.
- `claude` and `codex` found on PATH, unless a configured runtime uses the name.

Something that cannot be added (a binary not found, an unknown provider) is reported
in `CatalogBuild.skipped` rather than raised, so `loopd doctor` can show it; a value
that is simply wrong (a default model the entry does not offer) raises.

The agent roles (`[agents.*]`, `[defaults]`, `[delegate]`), and with them the
default entry, come from `loopd.catalog.roles`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict, cast, get_args
from urllib.parse import urlsplit

from loopd.catalog.catalog import RuntimeCatalog
from loopd.catalog.entry import (
    CredentialMode,
    ModelOption,
    ProviderRef,
    RuntimeEntry,
    Source,
)
from loopd.catalog.roles import Skipped, with_roles
from loopd.config.load import Env, EnvSettings, read_env
from loopd.config.schema import (
    Choices,
    Config,
    Harness,
    ModelSpec,
    ProviderConfig,
    ProviderKind,
    RuntimeConfig,
)
from loopd.protocol.model import ThinkingLevel

Which = Callable[[str], str | None]
VersionOf = Callable[[str], str | None]

ANTHROPIC_URL = "https://api.anthropic.com"
OPENAI_URL = "https://api.openai.com/v1"
OLLAMA_PORT = 11434

# Built-in choices, used where the config leaves a list out. Model lists are
# suggestions for native providers (`open_models`: any id the endpoint serves works).
_NATIVE_EFFORTS: tuple[str, ...] = get_args(ThinkingLevel)
_BUILTIN_MODELS: dict[ProviderKind | Harness, tuple[ModelSpec, ...]] = {
    ProviderKind.ANTHROPIC: (
        ModelSpec(id="claude-sonnet-4-5", aliases=("sonnet",)),
        ModelSpec(id="claude-opus-4-1", aliases=("opus",)),
        ModelSpec(id="claude-haiku-4-5", aliases=("haiku",)),
    ),
    ProviderKind.OPENAI_RESPONSES: (ModelSpec(id="gpt-5"), ModelSpec(id="gpt-5-mini")),
    # Claude Code resolves these aliases itself to the newest model of each family.
    Harness.CLAUDE: (ModelSpec(id="sonnet"), ModelSpec(id="opus"), ModelSpec(id="haiku")),
}
_BUILTIN_EFFORTS: dict[Harness, tuple[str, ...]] = {
    Harness.NATIVE: _NATIVE_EFFORTS,
    Harness.CLAUDE: ("low", "medium", "high", "max"),
    Harness.CODEX: ("minimal", "low", "medium", "high"),
    Harness.ACP: (),
}


class _ChoiceFields(TypedDict):
    models: tuple[ModelOption, ...]
    default_model: str | None
    small_model: str | None
    open_models: bool
    efforts: tuple[str, ...]
    default_effort: str | None


@dataclass(frozen=True, slots=True)
class CatalogBuild:
    catalog: RuntimeCatalog
    skipped: tuple[Skipped, ...] = ()


def build_catalog(config: Config, env: Env, *, which: Which, version_of: VersionOf) -> CatalogBuild:
    """The catalog this config and machine offer, plus what had to be left out.
    Raises `CatalogError` for a configured value the catalog cannot accept."""
    settings = read_env(env)
    providers = {**_env_providers(settings), **config.providers}
    entries: dict[str, RuntimeEntry] = {}
    skipped: list[Skipped] = []
    for provider in providers.values():
        source: Source = "config" if provider.name in config.providers else "discovered"
        entries[provider.name] = _native(provider.name, provider, provider.choices, source)
    for runtime in config.runtimes.values():
        found = _configured(runtime, providers, settings, which, version_of)
        _add(entries, skipped, found)
    for harness in (Harness.CLAUDE, Harness.CODEX):
        if harness.value not in entries:
            discovered = _foreign(harness.value, harness, None, settings, which, version_of)
            _add(entries, skipped, discovered)
    catalog = with_roles(RuntimeCatalog(tuple(entries.values())), config, skipped)
    return CatalogBuild(catalog, tuple(skipped))


def _add(
    entries: dict[str, RuntimeEntry], skipped: list[Skipped], item: RuntimeEntry | Skipped
) -> None:
    """A configured runtime replaces a provider's entry of the same name."""
    if isinstance(item, Skipped):
        skipped.append(item)
    else:
        entries[item.name] = item


def _env_providers(settings: EnvSettings) -> dict[str, ProviderConfig]:
    found: dict[str, ProviderConfig] = {}
    if settings.anthropic_api_key or settings.anthropic_base_url:
        found["anthropic"] = ProviderConfig(
            name="anthropic",
            kind=ProviderKind.ANTHROPIC,
            base_url=settings.anthropic_base_url or ANTHROPIC_URL,
            api_key_env="ANTHROPIC_API_KEY" if settings.anthropic_api_key else None,
        )
    if settings.openai_api_key or settings.openai_base_url:
        base_url = settings.openai_base_url or OPENAI_URL
        official = urlsplit(base_url).hostname == "api.openai.com"
        found["openai"] = ProviderConfig(
            name="openai",
            kind=ProviderKind.OPENAI_RESPONSES if official else ProviderKind.OPENAI_CHAT,
            base_url=base_url,
            api_key_env="OPENAI_API_KEY" if settings.openai_api_key else None,
        )
    if settings.ollama_host:
        found["ollama"] = ProviderConfig(
            name="ollama", kind=ProviderKind.OPENAI_CHAT, base_url=ollama_url(settings.ollama_host)
        )
    return found


def ollama_url(host: str) -> str:
    """OLLAMA_HOST as Ollama's clients read it (`host`, `host:port` or a URL; default
    scheme http, default port 11434), plus the OpenAI-compatible `/v1` path."""
    parts = urlsplit(host if "://" in host else f"http://{host}")
    port = parts.port or OLLAMA_PORT
    hostname = parts.hostname or "127.0.0.1"
    hostname = f"[{hostname}]" if ":" in hostname else hostname
    return f"{parts.scheme}://{hostname}:{port}{parts.path.rstrip('/')}/v1"


def _native(name: str, provider: ProviderConfig, choices: Choices, source: Source) -> RuntimeEntry:
    models = choices.models if choices.models is not None else _BUILTIN_MODELS.get(provider.kind)
    default_base = ANTHROPIC_URL if provider.kind is ProviderKind.ANTHROPIC else OPENAI_URL
    return RuntimeEntry(
        name=name,
        harness=Harness.NATIVE,
        source=source,
        credential="api_key" if provider.api_key_env else "none",
        description=provider.description,
        provider=ProviderRef(
            kind=provider.kind,
            base_url=provider.base_url or default_base,
            api_key_env=provider.api_key_env,
            anthropic_version=provider.anthropic_version,
        ),
        **_choice_fields(choices, models, _NATIVE_EFFORTS, open_default=choices.models is None),
    )


def _configured(
    runtime: RuntimeConfig,
    providers: dict[str, ProviderConfig],
    settings: EnvSettings,
    which: Which,
    version_of: VersionOf,
) -> RuntimeEntry | Skipped:
    if runtime.harness is not Harness.NATIVE:
        return _foreign(runtime.name, runtime.harness, runtime, settings, which, version_of)
    provider = providers.get(runtime.provider or "")
    if provider is None:
        return Skipped(runtime.name, f"provider {runtime.provider!r} is not configured or found")
    choices = _overlay(runtime.choices, provider.choices)
    entry = _native(runtime.name, provider, choices, "config")
    return dataclasses.replace(
        entry, profile=runtime.profile or "", description=runtime.description or entry.description
    )


def _foreign(
    name: str,
    harness: Harness,
    runtime: RuntimeConfig | None,
    settings: EnvSettings,
    which: Which,
    version_of: VersionOf,
) -> RuntimeEntry | Skipped:
    choices = runtime.choices if runtime else Choices()
    command = (runtime.command if runtime else None) or harness.value
    path = which(command)
    if path is None:
        return Skipped(name, f"command {command!r} not found")
    models = choices.models if choices.models is not None else _BUILTIN_MODELS.get(harness)
    return RuntimeEntry(
        name=name,
        harness=harness,
        source="config" if runtime else "discovered",
        credential=_foreign_credential(harness, settings),
        selection="explicit" if models or choices.open_models else "harness_managed",
        profile=(runtime.profile if runtime else None) or "",
        description=runtime.description if runtime else "",
        command=path,
        args=runtime.args if runtime else (),
        env=runtime.env if runtime else {},
        version=version_of(path),
        **_choice_fields(choices, models, _BUILTIN_EFFORTS[harness], open_default=False),
    )


def _foreign_credential(harness: Harness, settings: EnvSettings) -> CredentialMode:
    """A CLI uses the API key loopd passes through when there is one, else its own login."""
    key = {
        Harness.CLAUDE: settings.anthropic_api_key,
        Harness.CODEX: settings.openai_api_key,
    }.get(harness)
    return "api_key" if key else "cli_login"


def _choice_fields(
    choices: Choices,
    models: tuple[ModelSpec, ...] | None,
    efforts: tuple[str, ...],
    *,
    open_default: bool,
) -> _ChoiceFields:
    builtin = models is not None and models is not choices.models
    options = tuple(
        ModelOption(
            id=m.id,
            aliases=m.aliases,
            description=m.description,
            context_window=m.context_window,
            source="builtin" if builtin else None,
            credential=cast(CredentialMode | None, m.credential),
            targets=m.targets,
        )
        for m in models or ()
    )
    default_model = choices.default_model or (options[0].id if options else None)
    return {
        "models": options,
        "default_model": default_model,
        "small_model": choices.small_model,
        "open_models": choices.open_models if choices.open_models is not None else open_default,
        "efforts": choices.efforts if choices.efforts is not None else efforts,
        "default_effort": choices.default_effort,
    }


def _overlay(top: Choices, base: Choices) -> Choices:
    """`top`'s fields where set, else `base`'s."""
    return Choices(
        **{
            f.name: getattr(top, f.name)
            if getattr(top, f.name) is not None
            else getattr(base, f.name)
            for f in dataclasses.fields(Choices)
        }
    )
