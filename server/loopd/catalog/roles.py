"""The agent roles of a built catalog, from the config (see `loopd.catalog.agents`).

Each `[agents.NAME]` table is a role; `main` and `explore` always exist. Older
spellings fill what a role's table leaves out: `[defaults] runtime/model/effort`
for `main`, `[delegate] runtime/model` for `explore` (the `[agents.*]` key wins
where both are set). A role admits the entries its `runtimes` lists (default: every
entry; for `explore`, every native one, since it runs loopd's own engine); its
default is its `default`, else for `main` an admitted `[defaults] runtime`, else
the first runtime it lists, else for `main` the best ranked entry (native, claude,
codex, acp; configured before discovered; then by name) and for the others none
(`explore` then runs on the session's own runtime).

What the person named but this machine lacks (a CLI not installed) is reported in
`skipped` and grants nothing; a role whose default it is then has none. A value
that is simply wrong (a default naming no runtime at all, a model its default
runtime does not offer, a non-native runtime for `explore`) raises, naming the file
and key, as does any default `explore` cannot have (without one it would run on the
session's runtime, which the person did not choose); `main`'s default, like
`[defaults] runtime` always was, is reported instead, so `loopd doctor` still runs.

`main`'s model and effort become its default entry's defaults, because that is what
a session on it starts with; the other roles keep theirs (`AgentScope`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from loopd.catalog.agents import EXPLORE_AGENT, MAIN_AGENT, AgentScope
from loopd.catalog.catalog import RuntimeCatalog
from loopd.catalog.entry import ModelOption, RuntimeEntry
from loopd.catalog.errors import CatalogError, InvalidCatalog
from loopd.config.schema import AgentConfig, Config, Harness

_HARNESS_ORDER = (Harness.NATIVE, Harness.CLAUDE, Harness.CODEX, Harness.ACP)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A runtime that could not be added, and why (shown by `loopd doctor`)."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Role:
    """A role's settings with the older spellings folded in, and the dotted key each
    came from, so an error names the key the person wrote."""

    settings: AgentConfig
    keys: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def name(self) -> str:
        return self.settings.name

    def key(self, setting: str) -> str:
        return self.keys.get(setting, f"agents.{self.name}.{setting}")


def roles_of(config: Config) -> dict[str, Role]:
    """Every role the config names, plus `main` and `explore`, older spellings folded in."""
    roles = {name: Role(settings=agent) for name, agent in config.agents.items()}
    older = {
        MAIN_AGENT: {
            "default": ("defaults.runtime", config.defaults.runtime),
            "model": ("defaults.model", config.defaults.model),
            "effort": ("defaults.effort", config.defaults.effort),
        },
        EXPLORE_AGENT: {
            "default": ("delegate.runtime", config.delegate.runtime),
            "model": ("delegate.model", config.delegate.model),
        },
    }
    for name, spellings in older.items():
        role = roles.get(name, Role(settings=AgentConfig(name=name)))
        filled: dict[str, Any] = {}
        keys = dict(role.keys)
        for setting, (key, value) in spellings.items():
            if value is not None and getattr(role.settings, setting) is None:
                filled[setting], keys[setting] = value, key
        roles[name] = Role(settings=dataclasses.replace(role.settings, **filled), keys=keys)
    return dict(sorted(roles.items()))


def with_roles(catalog: RuntimeCatalog, config: Config, skipped: list[Skipped]) -> RuntimeCatalog:
    """`catalog` (flat, as built) with the config's roles, `main`'s defaults pinned."""
    roles = roles_of(config)
    main = _scope(roles[MAIN_AGENT], catalog, config, skipped)
    if main.default is not None:
        catalog = _pin(catalog, main.default, roles[MAIN_AGENT], config)
    others = [_scope(r, catalog, config, skipped) for r in roles.values() if r.name != MAIN_AGENT]
    return RuntimeCatalog(catalog.entries, main.default, (main, *others))


def _scope(
    role: Role, catalog: RuntimeCatalog, config: Config, skipped: list[Skipped]
) -> AgentScope:
    settings = role.settings
    scope = RuntimeCatalog(_admitted(role, catalog, config, skipped))
    default = _default(role, scope, config, skipped)
    model, effort = settings.model, settings.effort  # with no default: checked when chosen
    if role.name == MAIN_AGENT:
        model = effort = None  # pinned on its default entry instead
    elif default is not None:
        entry = scope.select(default)
        with _blamed(config, role.key("model")):
            model = entry.resolve_model(settings.model) if settings.model else None
        with _blamed(config, role.key("effort")):
            effort = entry.resolve_effort(settings.effort) if settings.effort else None
    return AgentScope(
        name=role.name, runtimes=scope.names, default=default, model=model, effort=effort
    )


def _admitted(
    role: Role, catalog: RuntimeCatalog, config: Config, skipped: list[Skipped]
) -> tuple[RuntimeEntry, ...]:
    """The entries `role` may run on. Explore's must be native (it runs loopd's engine)."""
    explore = role.name == EXPLORE_AGENT
    wanted = role.settings.runtimes
    if wanted is None:
        return tuple(e for e in catalog if not explore or e.harness is Harness.NATIVE)
    key = role.key("runtimes")
    found: list[RuntimeEntry] = []
    for name in wanted:
        entry = catalog.get(name)
        if entry is None:
            skipped.append(Skipped(name, f"{config.where(key)}: runtime {name!r} is not available"))
        elif explore and entry.harness is not Harness.NATIVE:
            raise _not_native(config, key, name)
        else:
            found.append(entry)
    return tuple(found)


def _default(
    role: Role, scope: RuntimeCatalog, config: Config, skipped: list[Skipped]
) -> str | None:
    """The role's default entry among those it admits (see the module's rules)."""
    settings, key = role.settings, role.key("default")
    if settings.default is not None:
        try:
            return scope.select(settings.default).name
        except CatalogError as err:
            if role.name == EXPLORE_AGENT and settings.default in _foreign(config):
                raise _not_native(config, key, settings.default) from err
            lacking = settings.default in {*config.runtimes, *(h.value for h in Harness)}
            if role.name == EXPLORE_AGENT or (role.name != MAIN_AGENT and not lacking):
                raise err.located(config.where(key)) from None  # explore: no fallback
            skipped.append(Skipped(settings.default, f"{config.where(key)}: {err}"))
            if settings.runtimes is None:
                return None  # never a runtime the person did not name
    if settings.runtimes is not None:
        listed = [name for name in settings.runtimes if name in scope]
        return listed[0] if listed else None
    if role.name != MAIN_AGENT:
        return None
    ranked = sorted(scope, key=_preference)
    return ranked[0].name if ranked else None


def _foreign(config: Config) -> set[str]:
    """The configured runtimes that are not native (and harness names), for explore."""
    names = {name for name, r in config.runtimes.items() if r.harness is not Harness.NATIVE}
    return names | {h.value for h in Harness if h is not Harness.NATIVE}


@contextmanager
def _blamed(config: Config, key: str) -> Iterator[None]:
    """Catalog errors raised inside name the configured `key` and its file."""
    try:
        yield
    except CatalogError as err:
        raise err.located(config.where(key)) from None


def _preference(entry: RuntimeEntry) -> tuple[int, bool, str]:
    return (_HARNESS_ORDER.index(entry.harness), entry.source != "config", entry.name)


def _pin(catalog: RuntimeCatalog, default: str, main: Role, config: Config) -> RuntimeCatalog:
    """Pin `main`'s model and effort onto its default entry; they must be valid there.
    A model an open entry does not list yet joins its list, so it can be the default."""
    entry = catalog.select(default)
    models, default_model = entry.models, entry.default_model
    settings = main.settings
    if settings.model is not None:
        with _blamed(config, main.key("model")):
            default_model = entry.resolve_model(settings.model)
        if default_model is not None and entry.find_model(default_model) is None:
            models = (*models, ModelOption(id=default_model))
    with _blamed(config, main.key("effort")):
        effort = entry.resolve_effort(settings.effort)
    pinned = dataclasses.replace(
        entry, models=models, default_model=default_model, default_effort=effort
    )
    return RuntimeCatalog(tuple(pinned if e is entry else e for e in catalog), default)


def _not_native(config: Config, key: str, name: str) -> InvalidCatalog:
    where = config.origins.get(key)
    return InvalidCatalog(
        str(where) if where is not None else "config",
        key,
        f"runtime {name!r} is not native; explore runs loopd's own engine",
    )
