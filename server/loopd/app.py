"""Composition root: with `loopd.runtimes.native.parts` (each native session's tools,
policy and sandbox), the one place that names concrete classes.

`build_app` reads configuration and the environment, discovers the runtime catalog,
opens the shared session store and wires one `SessionManager` whose runtime
factories come from the catalog: a native engine per provider entry, and the foreign
CLIs found on this machine. Every frontend (`loopd run`, `loopd acp`, `loopd lsp`)
is a client of that manager.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast, get_args

from loopd.catalog import (
    CatalogBuild,
    CatalogError,
    RuntimeCatalog,
    RuntimeEntry,
    discover_catalog,
)
from loopd.catalog.errors import NO_RUNTIME_HELP
from loopd.catalog.listing import listing_for, lists_models, no_model_help
from loopd.catalog.roles import roles_of
from loopd.checkpoints.service import CheckpointLimits, Checkpoints, blob_folder
from loopd.config import Config, TrustStore, data_dir, load_config, user_config_file
from loopd.config.login import LoginFileError, forget_login, read_login, with_login
from loopd.config.pins import Pins
from loopd.config.schema import EXPLORE_AGENT, MAIN_AGENT, Harness, TrustState
from loopd.engine.delegate import ChildRuntime
from loopd.engine.limits import Limits
from loopd.engine.loop import EngineConfig
from loopd.home import daemon_folder, home_path
from loopd.policy.domains import DomainLists
from loopd.policy.modes import DEFAULT_MODE
from loopd.policy.reading import DiskReader
from loopd.policy.rules import RuleSet
from loopd.protocol.errors import ConfigError
from loopd.protocol.model import ThinkingLevel
from loopd.providers.anthropic import DEFAULT_VERSION as DEFAULT_ANTHROPIC_VERSION
from loopd.providers.factory import ClosableProvider, make_provider
from loopd.providers.models import NoModelProvider
from loopd.runtimes.acp.agent import AcpRuntimeFactory, AcpSettings
from loopd.runtimes.base import RuntimeFactory
from loopd.runtimes.foreign.claude import ClaudeRuntimeFactory, ClaudeSettings
from loopd.runtimes.foreign.codex import CodexRuntimeFactory, CodexSettings
from loopd.runtimes.native.instructions import read_chain, read_guides, system_prompt
from loopd.runtimes.native.parts import GuardedParts, LazyProbe
from loopd.runtimes.native.runtime import NativeRuntimeFactory
from loopd.runtimes.native.wiring import NativeWiring
from loopd.sandbox.probe import Boundary
from loopd.sessions.manager import SessionManager
from loopd.sessions.table import SessionTable
from loopd.sessions.trust import WorkspaceTrust
from loopd.store.sqlite import SqliteStore
from loopd.tools.env import (
    SystemClock,
    ToolLimits,
)
from loopd.tools.skills import SkillShelf

log = logging.getLogger(__name__)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class App:
    env: Mapping[str, str]
    cwd: str
    config: Config
    catalog: CatalogBuild
    store: SqliteStore
    manager: SessionManager
    _providers: list[ClosableProvider] = field(default_factory=list)
    _probe: LazyProbe | None = None
    shares_store: bool = False  # the daemon's: its table outlives this app

    async def aclose(self) -> None:
        """Close every session, the providers and (unless shared) the store."""
        await self.manager.shutdown()
        await self.release()
        if not self.shares_store:
            self.store.close()

    async def release(self) -> None:
        """Close the providers, once no live session runs on them (see
        `SessionManager.runs_sessions`)."""
        for provider in self._providers:
            await provider.aclose()
        self._providers.clear()

    async def logout(self) -> None:
        forget_login(data_dir(self.env))
        await self.reload()

    async def reload(self) -> None:
        """Read the login and the config again and offer the runtimes they give now
        (after `loopd login` ran in a terminal, or the workspace file was trusted).
        Open sessions keep their runtime."""
        env, config = await asyncio.to_thread(_configure, self.env, self.cwd)
        catalog = await asyncio.to_thread(discover_catalog, config, env, self.cwd)
        probe = self._probe or LazyProbe(env)
        factories = _factories(catalog, env, config, self.store, self._providers, probe)
        self.config, self.catalog = config, catalog
        self.manager.use_runtimes(
            factories,
            catalog.catalog.default or "",
            functools.partial(_identity, catalog.catalog),
        )
        self.manager.approval_timeout = float(config.approvals.timeout_seconds)
        self.manager.no_default_help = _no_default_help(config, catalog)


def build_app(
    env: Mapping[str, str], cwd: str, *, editor: bool = False, table: SessionTable | None = None
) -> App:
    """The app for a workspace. `editor` (ACP, LSP) puts an untrusted workspace
    config to the person at each session's first turn; the CLI says it on stderr
    instead (`loopd run --yes` must never trust a folder). `table` is the daemon's,
    shared by every connection's app; None opens the store for this app alone."""
    effective, config = _configure(env, cwd)
    probe = LazyProbe(effective)
    if editor:  # an editor opens a session next: probe beside the rest of the build
        probe.start()
    catalog = discover_catalog(config, effective, cwd)
    store = table.store if table else SqliteStore(data_dir(env) / "sessions.db")
    providers: list[ClosableProvider] = []
    manager = SessionManager(
        store=store,
        runtimes=_factories(catalog, effective, config, store, providers, probe),
        default_runtime=catalog.catalog.default or "",
        now=utc_now,
        approval_timeout=float(config.approvals.timeout_seconds),
        no_runtime_help=f"{NO_RUNTIME_HELP} (`loopd doctor` shows what was found)",
        no_default_help=_no_default_help(config, catalog),
        identify=functools.partial(_identity, catalog.catalog),
        table=table,
        checkpoints=_checkpoints(env, config, store),
    )
    app = App(env, cwd, config, catalog, store, manager, providers, probe, table is not None)
    manager.credentials = app
    if editor:
        if config.workspace is not None and config.workspace.notice:
            log.warning("%s", config.workspace.notice)  # the editor's log; sessions ask
        manager.workspace = WorkspaceTrust(
            status=lambda: app.config.workspace,
            store=TrustStore(data_dir(env)),
            reconfigure=app.reload,
        )
    return app


def _configure(env: Mapping[str, str], cwd: str) -> tuple[dict[str, str], Config]:
    """The environment with the stored login filling its gaps, and the config with
    the login's defaults as its lowest layer."""
    try:
        login = read_login(data_dir(env))
    except LoginFileError as err:
        raise ConfigError(str(err)) from err
    return with_login(env, login), load_config(env, Path(cwd), base=login.config_layer())


def _factories(
    catalog: CatalogBuild,
    env: Mapping[str, str],
    config: Config,
    store: SqliteStore,
    providers: list[ClosableProvider],
    probe: LazyProbe,
) -> dict[str, RuntimeFactory]:
    factories: dict[str, RuntimeFactory] = {}
    for entry in catalog.catalog.entries_for(MAIN_AGENT):  # what a session may run on
        factory = _factory(entry, env, config, store, providers, probe, catalog.catalog)
        if factory is not None:
            factories[entry.name] = factory
    return factories


def _no_default_help(config: Config, catalog: CatalogBuild) -> str:
    """Why no runtime is the default: the configured one (file and key named) is not
    available, or nothing ranks first."""
    wanted = config.defaults.runtime
    reasons = [s.reason for s in catalog.skipped if wanted is not None and s.name == wanted]
    return reasons[-1] if reasons else "no default runtime: choose one (see `loopd catalog`)"


def _identity(catalog: RuntimeCatalog, name: str, config: Mapping[str, str]) -> dict[str, Any]:
    """The catalog's identity for a session's runtime and model, as the session's own
    (`main`) agent; a model the catalog does not list (an open-model server) is
    recorded as chosen."""
    try:
        identity = catalog.resolve(name, agent=MAIN_AGENT).identity().to_json()
    except CatalogError:
        identity = {"agent": MAIN_AGENT, "runtime": name}
    model = config.get("model")
    return identity | ({"model": model} if model else {})


def _factory(
    entry: RuntimeEntry,
    env: Mapping[str, str],
    config: Config,
    store: SqliteStore,
    providers: list[ClosableProvider],
    probe: LazyProbe,
    catalog: RuntimeCatalog,
) -> RuntimeFactory | None:
    """The factory for a catalog entry; None for a harness this build cannot run."""
    match entry.harness:
        case Harness.NATIVE:
            wiring = _native_wiring(entry, env, config, providers, probe, catalog)
            return NativeRuntimeFactory(entry.name, wiring, store)
        case Harness.CLAUDE:
            return ClaudeRuntimeFactory(
                ClaudeSettings(**_cli_fields(entry, env), pins=_pins(config))
            )
        case Harness.CODEX:
            return CodexRuntimeFactory(CodexSettings(**_cli_fields(entry, env), pins=_pins(config)))
        case Harness.ACP:
            settings = AcpSettings(
                entry.command or "",
                tuple(entry.args),
                entry.env,
                env,
                rules=RuleSet.from_config(_rules_table(config)),
                boundary=_boundary(env, config),
                probe=probe.get,
                limits=_tool_limits(config),
                pins=_pins(config),
            )
            return AcpRuntimeFactory(entry.name, settings)


def _pins(config: Config) -> Pins:
    """What the trusted workspace file runs, as it was trusted: a runtime does not
    start once one moved (`loopd.config.pins`)."""
    workspace = config.workspace
    return workspace.runs if workspace and workspace.state is TrustState.TRUSTED else ()


def _cli_fields(entry: RuntimeEntry, env: Mapping[str, str]) -> dict[str, Any]:
    """A foreign CLI's settings from its catalog entry: where it is, what it is
    given (on top of the editor's environment `env`), and the models and efforts
    the session offers."""
    return {
        "binary": entry.command,
        "env": dict(entry.env) | _small_model_env(entry),
        "inherit": dict(env),
        "extra_args": tuple(entry.args),
        "models": tuple(m.id for m in entry.models),
        "default_model": entry.default_model,
        "efforts": tuple(entry.efforts),
        "default_effort": entry.default_effort,
    }


def _small_model_env(entry: RuntimeEntry) -> dict[str, str]:
    """The Claude CLI takes the entry's small model (for its side requests) from its
    environment: the current variable and the older one it still reads."""
    if entry.harness is not Harness.CLAUDE or entry.small_model is None:
        return {}
    return dict.fromkeys(
        ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL"), entry.small_model
    )


def _native_wiring(
    entry: RuntimeEntry,
    env: Mapping[str, str],
    config: Config,
    providers: list[ClosableProvider],
    probe: LazyProbe,
    catalog: RuntimeCatalog,
) -> NativeWiring:
    provider = _provider(entry, env, config, providers)
    models = tuple(m.id for m in entry.models)
    default_model = entry.resolve_model(None) if entry.default_model else None
    default_model = default_model or (models[0] if models else "")
    listing = listing_for(entry, env) if lists_models(entry) else None
    unavailable = NoModelProvider(lambda: no_model_help(entry, listing.last if listing else None))
    rules = RuleSet.from_config(_rules_table(config))
    child = _explore_child(catalog, entry, ChildRuntime(provider, default_model), config, env)
    reader = _workspace_reader(env)
    shelf = SkillShelf(env, reader)
    return NativeWiring(
        provider_for=lambda model: provider if model else unavailable,
        parts_for=functools.partial(
            GuardedParts.open,
            env=env,
            probe=probe,
            rules=rules,
            child=child(providers),
            shelf=shelf,
            limits=_tool_limits(config),
            boundary=_boundary(env, config),
        ),
        system_for=lambda ctx, chain: shelf.book(ctx).indexed(
            system_prompt(ctx.cwd, ctx.roots, chain)
        ),
        chain_for=functools.partial(read_chain, reader=reader),
        guides_for=functools.partial(read_guides, reader=reader),
        clock=SystemClock(),
        default_mode=config.defaults.mode or DEFAULT_MODE.value,
        models=models,
        default_model=default_model,
        engine=EngineConfig(
            model=default_model,
            limits=_limits(config),
            windows={m.id: m.context_window for m in entry.models if m.context_window},
        ),
        open_models=entry.open_models,
        listing=listing,
        resolve_model=functools.partial(_model_id, entry),
        target_for=functools.partial(_target, entry),
    )


def _boundary(env: Mapping[str, str], config: Config) -> Boundary:
    """What every session's sandbox hides and lets through, native or a child's."""
    return Boundary(
        private=_own_dirs(env),
        home_readable=config.sandbox.home_readable,
        unix_sockets=config.sandbox.allow_unix_sockets,
        domains=_domains(config),
    )


def _checkpoints(env: Mapping[str, str], config: Config, store: SqliteStore) -> Checkpoints | None:
    """The checkpoint store under the data dir, as `[checkpoints]` bounds it."""
    settings = config.checkpoints
    if not settings.enabled:
        return None
    limits = CheckpointLimits(settings.max_bytes, settings.max_file_bytes)
    reader = _workspace_reader(env)
    folder = blob_folder(str(data_dir(env)))
    return Checkpoints(store, folder, reader, reader.home, _own_dirs(env), limits)


def _domains(config: Config) -> DomainLists | None:
    """The parsed domain lists, when network by domain is configured (the parser
    already refused a rule it cannot read)."""
    settings = config.sandbox
    if not settings.by_domain:
        return None
    return DomainLists.parse(settings.allowed_domains or (), settings.denied_domains)


def _workspace_reader(env: Mapping[str, str]) -> DiskReader:
    """The rules of every read loopd makes of a workspace or a home on its own
    (instruction files, skills): the file tools' secrets, loopd's own folders
    included; each use gives its roots."""
    return DiskReader((), home=os.path.realpath(home_path(env)), secrets=_own_dirs(env))


def _own_dirs(env: Mapping[str, str]) -> tuple[str, ...]:
    """loopd's own folders: its data (the session store, which holds whole
    conversations, and the login), its user configuration and the daemon's socket
    folder (a command that reached the daemon would drive loopd from outside its
    sandbox). Commands never see them and the file tools never read them."""
    own = (data_dir(env), user_config_file(env).parent, daemon_folder(env))
    return tuple(dict.fromkeys(os.path.realpath(p) for p in own))


def _provider(
    entry: RuntimeEntry,
    env: Mapping[str, str],
    config: Config,
    providers: list[ClosableProvider],
) -> ClosableProvider:
    ref = entry.provider
    assert ref is not None, "a native entry always has a provider"
    api_key = env.get(ref.api_key_env, "") if ref.api_key_env else ""  # "": sent no auth
    provider = make_provider(
        ref.kind.value,
        base_url=ref.base_url,
        api_key=api_key,
        anthropic_version=ref.anthropic_version or DEFAULT_ANTHROPIC_VERSION,
        idle_timeout=float(config.limits.stream_idle_seconds) or None,
    )
    providers.append(provider)
    return provider


def _explore_child(
    catalog: RuntimeCatalog,
    entry: RuntimeEntry,
    own: ChildRuntime,
    config: Config,
    env: Mapping[str, str],
) -> Callable[[list[ClosableProvider]], ChildRuntime]:
    """Where this entry's `explore` children run: resolved for the `explore` agent
    among the entries it admits (seed 001's per-agent entries), on its default
    runtime with its model and effort, the model sent being the resolved id (its
    per-effort target where one is named); with no default, on this entry, which
    lends its own model when its server lists them. Raises ConfigError naming the key."""
    try:
        role = catalog.agent(EXPLORE_AGENT)
        name = role.default or entry.name
        listed = catalog.select(name, agent=EXPLORE_AGENT).default_model is None
        chosen = role.selectors(name)[0] is not None or not listed
        resolved = catalog.resolve(name, agent=EXPLORE_AGENT) if chosen else None
    except CatalogError as err:
        setting = {"unknown_model": "model", "unsupported_effort": "effort"}.get(err.kind)
        key = roles_of(config)[EXPLORE_AGENT].key(setting or "default")
        raise ConfigError(f"{config.where(key)}: {err}") from err
    if resolved is None:
        return lambda providers: replace(own, name=entry.name)
    effort = resolved.effort if resolved.effort_explicit else None
    thinking = cast(ThinkingLevel, effort) if effort in get_args(ThinkingLevel) else "off"
    child, model = resolved.entry, resolved.entry.target_of(resolved.model, thinking)

    def build(providers: list[ClosableProvider]) -> ChildRuntime:
        same = child.name == entry.name
        provider = own.provider if same else _provider(child, env, config, providers)
        return ChildRuntime(provider, model or own.model, child.name, thinking)

    return build


def _model_id(entry: RuntimeEntry, model: str) -> str:
    """What the provider is sent for `model` in this entry: an alias becomes its id."""
    return entry.resolve_model(model) or model


def _target(entry: RuntimeEntry, model: str, effort: str) -> str:
    """What the provider is sent for model id `model` at `effort`: its target there."""
    return entry.target_of(model, effort) or model


def _rules_table(config: Config) -> dict[str, Any]:
    a = config.approvals
    return {"allow": list(a.allow), "ask": list(a.ask), "deny": list(a.deny)}


def _limits(config: Config) -> Limits:
    c = config.limits
    return Limits(
        max_iterations=c.max_iterations,
        max_tool_calls=c.max_tool_calls,
        max_parallel=c.max_parallel,
        max_result_bytes=c.max_result_bytes,
        max_identical_calls=c.max_identical_calls,
        max_turn_tokens=c.turn_token_ceiling,
        max_turn_cost_usd=c.turn_cost_ceiling,
        max_shown_chars=c.max_shown_chars,
    )


def _tool_limits(config: Config) -> ToolLimits:
    c = config.limits
    return ToolLimits(output_max_chars=c.max_output_chars, shown_max_chars=c.max_shown_chars)
