"""What a session records about its runtime (`RuntimeIdentity`), and what changed in
its catalog entry between two such records (`entry_changes`).

The identity is secret-free and JSON round-trippable; fields added after records
were first made read back as their defaults, so older sessions still load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, get_args

from loopd.catalog.agents import MAIN_AGENT
from loopd.catalog.entry import CredentialMode, SelectionKind, Source
from loopd.catalog.errors import InvalidCatalog
from loopd.config.schema import Harness

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
    i.effort_explicit else None, agent=i.agent)`: an effort the entry chose follows
    the entry. `agent` is the role it runs as (`main` for a session's own agent)."""

    runtime: str
    harness: Harness
    profile: str
    source: Source
    selection: SelectionKind
    model: str | None
    effort: str | None
    catalog_digest: str
    # absent from records made before these fields existed: read back as the defaults
    agent: str = MAIN_AGENT
    credential: CredentialMode | None = None
    target: str | None = None
    small_model: str | None = None
    effort_explicit: bool = False
    entry_digest: str = ""
    entry_fields: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
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
            agent=_optional(data, "agent") or MAIN_AGENT,
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
