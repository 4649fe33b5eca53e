"""The runtime catalog: an immutable set of entries, resolution, identity.

Resolution is deterministic and never guesses: an omitted selector takes the default
at its level (the catalog's default entry, the entry's default model and effort); an
explicit selector is checked only within the entry already chosen, and a miss is a
typed error, never a fallback to some other runtime or model. A runtime selector may
name an entry or a harness (`--runtime claude` with only `claude-work` configured):
a harness picks the catalog default if it has that harness, else the first entry of
that harness by name.

The digest is the SHA-256 of the canonical JSON of the secret-free projection
(entries sorted by name, keys sorted). It changes when anything a person could
notice changes, and never with the order entries or keys were given in. Model and
effort lists keep their order, because that order is what a client shows.

A session records a `RuntimeIdentity` (what it resolved to, plus the digest of the
catalog that authorised it) and keeps it when loaded; a different digest on load
tells the session layer the catalog changed underneath it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, get_args

from loopd.catalog.entry import CredentialMode, RuntimeEntry, SelectionKind, Source, digest
from loopd.catalog.errors import InvalidCatalog, UnknownHarness, UnknownRuntime
from loopd.config.schema import Harness


@dataclass(frozen=True, slots=True)
class RuntimeCatalog:
    """Entries sorted by name; `default` names one of them or is `None`. An empty
    catalog is valid: it is what a session with nothing to delegate to holds."""

    entries: tuple[RuntimeEntry, ...] = ()
    default: str | None = None
    _by_name: Mapping[str, RuntimeEntry] = field(init=False, repr=False, compare=False)
    digest: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        entries = tuple(sorted(self.entries, key=lambda entry: entry.name))
        by_name: dict[str, RuntimeEntry] = {}
        for entry in entries:
            if not isinstance(entry, RuntimeEntry):
                raise InvalidCatalog("catalog", "entries", "holds something not an entry")
            if entry.name in by_name:
                raise InvalidCatalog("catalog", "entries", f"two runtimes named {entry.name!r}")
            by_name[entry.name] = entry
        if self.default is not None and self.default not in by_name:
            raise UnknownRuntime(self.default, by_name)
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "_by_name", MappingProxyType(by_name))
        object.__setattr__(self, "digest", digest(self._projection()))

    def __iter__(self) -> Iterator[RuntimeEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def get(self, name: str) -> RuntimeEntry | None:
        return self._by_name.get(name)

    def resolve(
        self, runtime: str | None = None, model: str | None = None, effort: str | None = None
    ) -> Resolved:
        """Select a runtime tuple. Raises UnknownRuntime, UnknownHarness, UnknownModel
        or UnsupportedEffort; never substitutes a choice the caller did not make."""
        entry = self.select(runtime)
        return Resolved(
            entry=entry,
            model=entry.resolve_model(model),
            effort=entry.resolve_effort(effort),
            effort_explicit=effort is not None,
            catalog_digest=self.digest,
        )

    def scoped(self, allowed: Iterable[str]) -> RuntimeCatalog:
        """The part of this catalog a session may delegate to: entries named in
        `allowed` (names not in the catalog grant nothing). The default survives only
        if it is in scope; otherwise a child must name its runtime explicitly."""
        keep = set(allowed)
        entries = tuple(entry for entry in self.entries if entry.name in keep)
        default = self.default if self.default in keep else None
        return RuntimeCatalog(entries, default)

    def to_json(self) -> dict[str, Any]:
        return {**self._projection(), "digest": self.digest}

    def _projection(self) -> dict[str, Any]:
        return {"default": self.default, "entries": [entry.to_json() for entry in self.entries]}

    def select(self, runtime: str | None) -> RuntimeEntry:
        """The entry `runtime` names (an entry or a harness), or the default."""
        if runtime is None:
            if self.default is None:
                raise UnknownRuntime(None, self.names)
            return self._by_name[self.default]
        entry = self._by_name.get(runtime)
        if entry is not None:
            return entry
        if runtime not in {harness.value for harness in Harness}:
            raise UnknownRuntime(runtime, self.names)
        candidates = [e for e in self.entries if e.harness == runtime]
        if not candidates:
            raise UnknownHarness(runtime, self.names)
        preferred = [e for e in candidates if e.name == self.default]
        return (preferred or candidates)[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolved:
    """The tuple a session runs on. `model` is the concrete id (aliases resolved), or
    `None` for a harness-managed entry whose CLI picks its own model; `effort` is
    `None` when neither the caller nor the entry chose one (the runtime's default).
    `effort_explicit` says the caller chose the effort: a session keeps an effort it
    chose across catalog changes, and follows the entry's default otherwise."""

    entry: RuntimeEntry
    model: str | None
    effort: str | None
    catalog_digest: str
    effort_explicit: bool = False

    @property
    def target(self) -> str | None:
        """The id the provider or CLI receives: the model's target for the effort."""
        return self.entry.target_of(self.model, self.effort)

    @property
    def source(self) -> Source:
        return self.entry.source_of(self.model)

    @property
    def credential(self) -> CredentialMode:
        return self.entry.credential_of(self.model)

    @property
    def small_model(self) -> str | None:
        return self.entry.small_model

    @property
    def runtime(self) -> str:
        return self.entry.name

    @property
    def harness(self) -> Harness:
        return self.entry.harness

    def identity(self) -> RuntimeIdentity:
        return RuntimeIdentity(
            runtime=self.entry.name,
            harness=self.entry.harness,
            profile=self.entry.profile,
            source=self.source,
            selection=self.entry.selection,
            model=self.model,
            effort=self.effort,
            catalog_digest=self.catalog_digest,
            credential=self.credential,
            target=self.target,
            small_model=self.small_model,
            effort_explicit=self.effort_explicit,
            entry_digest=self.entry.digest,
            entry_fields=MappingProxyType(self.entry.fingerprint()),
        )


_IDENTITY_FIELDS = (
    "runtime",
    "harness",
    "profile",
    "source",
    "selection",
    "model",
    "effort",
    "catalog_digest",
)
_OPTIONAL_FIELDS = frozenset({"model", "effort"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeIdentity:
    """What a session records about its runtime: secret-free, JSON round-trippable.
    Re-resolve it on load with `catalog.resolve(i.runtime, i.model, i.effort if
    i.effort_explicit else None)`: an effort the entry chose follows the entry."""

    runtime: str
    harness: Harness
    profile: str
    source: Source
    selection: SelectionKind
    model: str | None
    effort: str | None
    catalog_digest: str
    # absent from records made before these fields existed: read back as the defaults
    credential: CredentialMode | None = None
    target: str | None = None
    small_model: str | None = None
    effort_explicit: bool = False
    entry_digest: str = ""
    entry_fields: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "harness": self.harness.value,
            "profile": self.profile,
            "source": self.source,
            "selection": self.selection,
            "model": self.model,
            "effort": self.effort,
            "catalog_digest": self.catalog_digest,
            "credential": self.credential,
            "target": self.target,
            "small_model": self.small_model,
            "effort_explicit": self.effort_explicit,
            "entry_digest": self.entry_digest,
            "entry_fields": dict(self.entry_fields),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuntimeIdentity:
        """Inverse of `to_json`. Raises `InvalidCatalog` for a malformed record."""
        for name in _IDENTITY_FIELDS:
            value = data.get(name)
            if not isinstance(value, str) and not (value is None and name in _OPTIONAL_FIELDS):
                raise InvalidCatalog("runtime identity", name, "missing or not a string")
        for name, allowed in (("source", Source), ("selection", SelectionKind)):
            if data[name] not in get_args(allowed):
                raise InvalidCatalog("runtime identity", name, f"unknown value {data[name]!r}")
        if data["harness"] not in {harness.value for harness in Harness}:
            raise InvalidCatalog("runtime identity", "harness", f"unknown {data['harness']!r}")
        return cls(
            runtime=data["runtime"],
            harness=Harness(data["harness"]),
            profile=data["profile"],
            source=data["source"],
            selection=data["selection"],
            model=data["model"],
            effort=data["effort"],
            catalog_digest=data["catalog_digest"],
            credential=_optional(data, "credential", get_args(CredentialMode)),
            target=_optional(data, "target"),
            small_model=_optional(data, "small_model"),
            effort_explicit=data.get("effort_explicit") is True,
            entry_digest=str(data.get("entry_digest") or ""),
            entry_fields=MappingProxyType(_fields(data.get("entry_fields"))),
        )


def _optional(data: Mapping[str, Any], name: str, allowed: tuple[str, ...] = ()) -> Any:
    value = data.get(name)
    if value is not None and (not isinstance(value, str) or (allowed and value not in allowed)):
        raise InvalidCatalog("runtime identity", name, f"unknown value {value!r}")
    return value


def _fields(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidCatalog("runtime identity", "entry_fields", "not a map of strings")
    return dict(value)


def entry_changes(stored: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[str, ...]:
    """What changed in a session's catalog entry between the identity it recorded and
    the one it resolves to now (both as `RuntimeIdentity.to_json` gives them): the
    names of the fields that differ, `("entry",)` if the entry changed but the record
    predates per-field fingerprints, `()` if nothing did or the record has no digest."""
    before, after = stored.get("entry_digest"), current.get("entry_digest")
    if not isinstance(before, str) or not before or before == after:
        return ()
    old, new = stored.get("entry_fields"), current.get("entry_fields")
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return ("entry",)
    changed = tuple(sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)))
    return changed or ("entry",)
