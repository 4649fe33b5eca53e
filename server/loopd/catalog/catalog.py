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

Every resolution is on behalf of an agent role (`loopd.catalog.agents`): `main`
unless the caller names another. It selects only among the entries that role admits
and starts from the role's defaults; an unknown role is `UnknownAgent`, never the
catalog as a whole. The digest covers the roles too.

A session records a `RuntimeIdentity` (what it resolved to, for which agent, plus
the digest of the catalog that authorised it) and keeps it when loaded; a different
digest on load tells the session layer the catalog changed underneath it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from loopd.catalog.agents import MAIN_AGENT, AgentScope
from loopd.catalog.entry import CredentialMode, RuntimeEntry, Source, digest
from loopd.catalog.errors import InvalidCatalog, UnknownAgent, UnknownHarness, UnknownRuntime
from loopd.catalog.identity import RuntimeIdentity
from loopd.config.schema import Harness

_T = TypeVar("_T", RuntimeEntry, AgentScope)


@dataclass(frozen=True, slots=True)
class RuntimeCatalog:
    """Entries sorted by name, and the agent roles that may run on them. `default`
    is the `main` role's default entry, or `None`; without a `main` among `agents`,
    that role admits every entry. An empty catalog is valid: it is what a session
    with nothing to delegate to holds."""

    entries: tuple[RuntimeEntry, ...] = ()
    default: str | None = None
    agents: tuple[AgentScope, ...] = ()
    _by_name: Mapping[str, RuntimeEntry] = field(init=False, repr=False, compare=False)
    _roles: Mapping[str, AgentScope] = field(init=False, repr=False, compare=False)
    digest: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        entries = tuple(sorted(self.entries, key=lambda entry: entry.name))
        by_name = _named(entries, RuntimeEntry, "entries", "runtimes")
        if self.default is not None and self.default not in by_name:
            raise UnknownRuntime(self.default, by_name)
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "_by_name", MappingProxyType(by_name))
        roles = self._roles_of(self.agents)
        object.__setattr__(self, "agents", tuple(roles.values()))
        object.__setattr__(self, "default", roles[MAIN_AGENT].default)
        object.__setattr__(self, "_roles", MappingProxyType(roles))
        object.__setattr__(self, "digest", digest(self._projection()))

    def _roles_of(self, agents: Iterable[AgentScope]) -> dict[str, AgentScope]:
        """The roles by name (`main` made up when absent), each checked against the
        entries: it admits only entries of this catalog, and its model and effort
        are valid on its default entry (the model stored as the id it selects)."""
        roles = {
            name: self._checked(role)
            for name, role in _named(agents, AgentScope, "agents", "agents").items()
        }
        main = roles.setdefault(MAIN_AGENT, AgentScope(name=MAIN_AGENT, runtimes=self.names))
        if main.default is None and self.default is not None:
            roles[MAIN_AGENT] = self._checked(dataclasses.replace(main, default=self.default))
        elif self.default not in (None, main.default):
            raise InvalidCatalog("catalog", "default", "is not the main agent's default")
        return dict(sorted(roles.items()))

    def _checked(self, role: AgentScope) -> AgentScope:
        where = f"agent {role.name!r}"
        unknown = [name for name in role.runtimes if name not in self._by_name]
        if unknown:
            raise InvalidCatalog(where, "runtimes", f"{unknown[0]!r} is not in the catalog")
        if role.default is None or (role.model is None and role.effort is None):
            return role
        entry = self._by_name[role.default]
        model = entry.resolve_model(role.model) if role.model is not None else None
        entry.resolve_effort(role.effort)
        return dataclasses.replace(role, model=model)

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

    def agent(self, name: str) -> AgentScope:
        """The role `name`; raises `UnknownAgent` for a role this catalog does not know."""
        role = self._roles.get(name)
        if role is None:
            raise UnknownAgent(name, self._roles)
        return role

    def entries_for(self, agent: str) -> tuple[RuntimeEntry, ...]:
        """The entries `agent` may run on, sorted by name; none for an unknown agent
        (never a partial or the whole catalog)."""
        role = self._roles.get(agent)
        return () if role is None else tuple(self._by_name[name] for name in role.runtimes)

    def resolve(
        self,
        runtime: str | None = None,
        model: str | None = None,
        effort: str | None = None,
        *,
        agent: str = MAIN_AGENT,
    ) -> Resolved:
        """Select a runtime tuple for `agent` among the entries it admits, starting
        from its defaults. Raises UnknownAgent, UnknownRuntime, UnknownHarness,
        UnknownModel or UnsupportedEffort; never substitutes a choice the caller (or
        the role) did not make."""
        entry = self.select(runtime, agent=agent)
        role_model, role_effort = self._roles[agent].selectors(entry.name)
        model = model if model is not None else role_model
        effort = effort if effort is not None else role_effort
        return Resolved(
            entry=entry,
            model=entry.resolve_model(model),
            effort=entry.resolve_effort(effort),
            effort_explicit=effort is not None,
            catalog_digest=self.digest,
            agent=agent,
        )

    def to_json(self) -> dict[str, Any]:
        return {**self._projection(), "digest": self.digest}

    def _projection(self) -> dict[str, Any]:
        return {
            "default": self.default,
            "entries": [entry.to_json() for entry in self.entries],
            "agents": [role.to_json() for role in self.agents],
        }

    def select(self, runtime: str | None, *, agent: str = MAIN_AGENT) -> RuntimeEntry:
        """The entry `runtime` names (an entry or a harness) among those `agent`
        may run on, or the agent's default."""
        role = self.agent(agent)
        if runtime is None:
            if role.default is None:
                raise UnknownRuntime(None, role.runtimes, agent)
            return self._by_name[role.default]
        if role.admits(runtime):
            return self._by_name[runtime]
        if runtime not in {harness.value for harness in Harness}:
            raise UnknownRuntime(runtime, role.runtimes, agent)
        candidates = [e for e in self.entries_for(agent) if e.harness == runtime]
        if not candidates:
            raise UnknownHarness(runtime, role.runtimes, agent)
        preferred = [e for e in candidates if e.name == role.default]
        return (preferred or candidates)[0]


def _named(items: Iterable[_T], kind: type[_T], field: str, noun: str) -> dict[str, _T]:
    """`items` by name: each must be a `kind`, and no two may share a name."""
    found: dict[str, _T] = {}
    for item in items:
        if not isinstance(item, kind):
            raise InvalidCatalog("catalog", field, f"holds something not {kind.__name__}")
        if item.name in found:
            raise InvalidCatalog("catalog", field, f"two {noun} named {item.name!r}")
        found[item.name] = item
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolved:
    """The tuple a session runs on. `model` is the concrete id (aliases resolved), or
    `None` for a harness-managed entry whose CLI picks its own model; `effort` is
    `None` when neither the caller nor the entry chose one (the runtime's default).
    `effort_explicit` says the caller (or its agent role) chose the effort: a session
    keeps an effort it chose across catalog changes, and follows the entry's default
    otherwise."""

    entry: RuntimeEntry
    model: str | None
    effort: str | None
    catalog_digest: str
    effort_explicit: bool = False
    agent: str = MAIN_AGENT  # the role it was resolved for (seed 001 `AgentType`)

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
            agent=self.agent,
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
