"""One catalog entry: a runtime a session may run on, validated when it is built.

An entry is immutable all the way down: sequences become tuples and mappings become
read-only copies at construction, so a caller that keeps (and later mutates) the list
or dict it passed in cannot change the catalog behind the catalog's back.

Invariants, checked in `__post_init__` (failures raise `InvalidCatalog`):
- `native` entries name a provider and never a command; foreign ones the reverse.
- `harness_managed` entries (the CLI picks its own model) offer no models at all;
  the native engine always needs a concrete model, so it is never harness-managed.
- `explicit` entries offer at least one model and a default, unless `open_models`
  (any model id is accepted as is, as an OpenAI-compatible server would).
- Every model selector (id or alias) is unique within the entry; the default model
  is stored as the id it selects. The default effort is one of `efforts`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from loopd.catalog.errors import InvalidCatalog, UnknownHarness, UnknownModel, UnsupportedEffort
from loopd.config.schema import Harness, ProviderKind
from loopd.config.table import NAME_RE

Source = Literal["config", "discovered", "builtin"]
CredentialMode = Literal["api_key", "cli_login", "none"]
SelectionKind = Literal["explicit", "harness_managed"]

_MODEL_ID_RE = re.compile(r"^[^\s\x00-\x1f]{1,200}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelOption:
    """A model an entry offers: the id the provider or CLI receives, plus aliases.

    `source` and `credential` override the entry's for this model (`None`: the
    entry's), so one runtime can list built-in models next to configured ones, or a
    model reached with an API key next to the CLI's own login. `targets` maps an
    effort to the id sent instead of `id` when that effort is chosen (a gateway or
    CLI that names `sonnet-high` rather than taking an effort parameter)."""

    id: str
    aliases: tuple[str, ...] = ()
    description: str = ""
    context_window: int | None = None  # tokens, when the configuration says
    source: Source | None = None
    credential: CredentialMode | None = None
    targets: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, "targets", MappingProxyType(dict(self.targets)))

    @property
    def selectors(self) -> tuple[str, ...]:
        return (self.id, *self.aliases)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderRef:
    """Where a native entry's model lives. `api_key_env` names the variable holding
    the key; the key itself never enters the catalog."""

    kind: ProviderKind
    base_url: str
    api_key_env: str | None = None
    anthropic_version: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeEntry:
    name: str
    harness: Harness
    source: Source = "config"
    credential: CredentialMode = "none"
    selection: SelectionKind = "explicit"
    profile: str = ""  # the backend key; empty means the harness name
    description: str = ""
    models: tuple[ModelOption, ...] = ()
    default_model: str | None = None
    small_model: str | None = None  # for side work (titles, summaries); stored as its id
    open_models: bool = False
    efforts: tuple[str, ...] = ()
    default_effort: str | None = None
    command: str | None = None  # resolved path of a foreign CLI or ACP agent
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    version: str | None = None
    provider: ProviderRef | None = None

    def __post_init__(self) -> None:
        _set = object.__setattr__
        _set(self, "harness", _harness(self.harness))
        _set(self, "profile", self.profile or self.harness.value)
        _set(self, "models", tuple(self.models))
        _set(self, "efforts", tuple(self.efforts))
        _set(self, "args", tuple(self.args))
        _set(self, "env", MappingProxyType(dict(self.env)))
        self._check_identity()
        self._check_launch()
        self._check_models()
        self._check_efforts()

    def find_model(self, selector: str) -> ModelOption | None:
        """The option whose id or alias is `selector`."""
        for option in self.models:
            if selector in option.selectors:
                return option
        return None

    def resolve_model(self, model: str | None) -> str | None:
        """The model id `model` selects here (`None`: the default). Harness-managed
        entries resolve to `None` and refuse any explicit model."""
        if self.selection == "harness_managed":
            if model is not None:
                raise UnknownModel(self.name, model, ())
            return None
        if model is None:
            if self.default_model is None:
                raise UnknownModel(self.name, None, self._model_ids())
            return self.default_model
        option = self.find_model(model)
        if option is not None:
            return option.id
        if self.open_models and valid_model_id(model):
            return model
        raise UnknownModel(self.name, model, self._model_ids())

    def source_of(self, model: str | None) -> Source:
        """The source of model id `model` here: its own if it has one, else the entry's."""
        option = self.find_model(model) if model is not None else None
        return option.source if option is not None and option.source else self.source

    def credential_of(self, model: str | None) -> CredentialMode:
        option = self.find_model(model) if model is not None else None
        return option.credential if option is not None and option.credential else self.credential

    def target_of(self, model: str | None, effort: str | None) -> str | None:
        """The id sent for model id `model` at `effort`: its per-effort target, if any."""
        option = self.find_model(model) if model is not None else None
        if option is None or effort is None:
            return model
        return option.targets.get(effort, model)

    def resolve_effort(self, effort: str | None) -> str | None:
        """`effort` if allowed here; `None` selects the default (which may be `None`)."""
        if effort is None:
            return self.default_effort
        if effort not in self.efforts:
            raise UnsupportedEffort(self.name, effort, self.efforts)
        return effort

    def _model_ids(self) -> tuple[str, ...]:
        return tuple(option.id for option in self.models)

    def to_json(self) -> dict[str, Any]:
        """The secret-free projection used by the digest and by `loopd catalog --json`:
        env values and any credentials embedded in a base URL are left out."""
        provider = self.provider
        return {
            "name": self.name,
            "harness": self.harness.value,
            "profile": self.profile,
            "source": self.source,
            "credential": self.credential,
            "selection": self.selection,
            "description": self.description,
            "models": [
                {
                    "id": m.id,
                    "aliases": list(m.aliases),
                    "description": m.description,
                    "context_window": m.context_window,
                    "source": m.source,
                    "credential": m.credential,
                    "targets": dict(m.targets),
                }
                for m in self.models
            ],
            "default_model": self.default_model,
            "small_model": self.small_model,
            "open_models": self.open_models,
            "efforts": list(self.efforts),
            "default_effort": self.default_effort,
            "command": self.command,
            "args": list(self.args),
            "env_keys": sorted(self.env),
            "version": self.version,
            "provider": None
            if provider is None
            else {
                "kind": provider.kind.value,
                "base_url": public_url(provider.base_url),
                "api_key_env": provider.api_key_env,
                "anthropic_version": provider.anthropic_version,
            },
        }

    @property
    def digest(self) -> str:
        """The digest of this entry's secret-free projection: a session records it
        and is told, when loaded, that its entry changed if it differs."""
        return digest(self.to_json())

    def fingerprint(self) -> dict[str, str]:
        """A short digest per field of the projection, so a changed entry can be
        described by what changed ("models", "args") without storing its contents."""
        return {name: digest(value)[7:19] for name, value in self.to_json().items()}

    def _fail(self, field_name: str, problem: str) -> InvalidCatalog:
        return InvalidCatalog(f"runtime {self.name!r}", field_name, problem)

    def _check_identity(self) -> None:
        for name, value in (("name", self.name), ("profile", self.profile)):
            if not NAME_RE.match(value):
                raise self._fail(name, "must be a name of letters, digits, '.', '_' or '-'")
        for name, value, allowed in (
            ("source", self.source, Source),
            ("credential", self.credential, CredentialMode),
            ("selection", self.selection, SelectionKind),
        ):
            if value not in get_args(allowed):
                raise self._fail(name, f"must be one of {', '.join(get_args(allowed))}")

    def _check_launch(self) -> None:
        if self.harness is Harness.NATIVE:
            if self.provider is None:
                raise self._fail("provider", "a native runtime needs a provider")
            if self.command is not None:
                raise self._fail("command", "a native runtime runs in-process")
            if self.selection == "harness_managed":
                raise self._fail("selection", "the native engine needs an explicit model")
        else:
            if self.provider is not None:
                raise self._fail("provider", "only native runtimes have a provider")
            if not self.command:
                raise self._fail("command", f"a {self.harness.value} runtime needs a command")

    def _check_models(self) -> None:
        seen: set[str] = set()
        for option in self.models:
            if not valid_model_id(option.id):
                raise self._fail("models", f"invalid model id {option.id!r}")
            self._check_option(option)
            for alias in option.aliases:
                if not NAME_RE.match(alias):
                    raise self._fail("models", f"invalid alias {alias!r}")
            for selector in option.selectors:
                if selector in seen:
                    raise self._fail("models", f"{selector!r} names more than one model")
                seen.add(selector)
        if self.selection == "harness_managed":
            if self.models or self.default_model or self.small_model or self.open_models:
                raise self._fail("models", "a harness-managed runtime offers no models")
            return
        if self.small_model is not None:
            object.__setattr__(self, "small_model", self._small_model_id(self.small_model))
        if self.default_model is None:
            if not self.open_models:
                raise self._fail("default_model", "is required")
            return
        chosen = self.find_model(self.default_model)
        if chosen is None:
            raise self._fail("default_model", f"{self.default_model!r} is not one of its models")
        object.__setattr__(self, "default_model", chosen.id)

    def _check_option(self, option: ModelOption) -> None:
        where = f"models.{option.id}"
        for name, value, allowed in (
            ("source", option.source, Source),
            ("credential", option.credential, CredentialMode),
        ):
            if value is not None and value not in get_args(allowed):
                choices = ", ".join(get_args(allowed))
                raise self._fail(f"{where}.{name}", f"must be one of {choices}")
        for effort, target in option.targets.items():
            if effort not in self.efforts:
                raise self._fail(f"{where}.targets", f"{effort!r} is not one of efforts")
            if not valid_model_id(target):
                raise self._fail(f"{where}.targets", f"invalid model id {target!r}")

    def _small_model_id(self, selector: str) -> str:
        option = self.find_model(selector)
        if option is not None:
            return option.id
        if self.open_models and valid_model_id(selector):
            return selector
        raise self._fail("small_model", f"{selector!r} is not one of its models")

    def _check_efforts(self) -> None:
        if len(set(self.efforts)) != len(self.efforts):
            raise self._fail("efforts", "lists an effort twice")
        for effort in self.efforts:
            if not NAME_RE.match(effort):
                raise self._fail("efforts", f"invalid effort {effort!r}")
        if self.default_effort is not None and self.default_effort not in self.efforts:
            raise self._fail("default_effort", f"{self.default_effort!r} is not one of efforts")


def valid_model_id(model: str) -> bool:
    """Model ids are opaque to loopd (`qwen2.5-coder:7b`, `claude-opus-4-8[1m]`):
    anything printable without whitespace, up to 200 characters."""
    return bool(_MODEL_ID_RE.match(model))


def _harness(value: Harness | str) -> Harness:
    try:
        return Harness(value)
    except ValueError:
        raise UnknownHarness(str(value), (h.value for h in Harness)) from None


def public_url(url: str) -> str:
    """`url` without user info, query or fragment: the parts that may carry secrets."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def digest(projection: object) -> str:
    """`sha256:` and the hex SHA-256 of the canonical JSON of `projection`."""
    canonical = json.dumps(projection, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
