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
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loopd.app_wiring import (
    boundary,
    native_wiring,
    own_dirs,
    rules_table,
    tool_limits,
    workspace_reader,
)
from loopd.catalog import (
    CatalogBuild,
    CatalogError,
    RuntimeCatalog,
    RuntimeEntry,
    discover_catalog,
)
from loopd.catalog.errors import NO_RUNTIME_HELP
from loopd.checkpoints.service import CheckpointLimits, Checkpoints, blob_folder
from loopd.config import Config, TrustStore, data_dir, load_config
from loopd.config.login import LoginFileError, forget_login, read_login, with_login
from loopd.config.pins import Pins
from loopd.config.schema import MAIN_AGENT, Harness, TrustState
from loopd.policy.rules import RuleSet
from loopd.protocol.errors import ConfigError
from loopd.providers.factory import ClosableProvider
from loopd.runtimes.acp.agent import AcpRuntimeFactory, AcpSettings
from loopd.runtimes.base import RuntimeFactory
from loopd.runtimes.foreign.claude import ClaudeRuntimeFactory, ClaudeSettings
from loopd.runtimes.foreign.codex import CodexRuntimeFactory, CodexSettings
from loopd.runtimes.native.parts import LazyProbe
from loopd.runtimes.native.runtime import NativeRuntimeFactory
from loopd.sessions.manager import SessionManager
from loopd.sessions.table import SessionTable
from loopd.sessions.trust import WorkspaceTrust
from loopd.store.sqlite import SqliteStore

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
    env: Mapping[str, str],
    cwd: str,
    *,
    editor: bool = False,
    table: SessionTable | None = None,
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
            wiring = native_wiring(entry, env, config, providers, probe, catalog)
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
                rules=RuleSet.from_config(rules_table(config)),
                boundary=boundary(env, config),
                probe=probe.get,
                limits=tool_limits(config),
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
        ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL"),
        entry.small_model,
    )


def _checkpoints(env: Mapping[str, str], config: Config, store: SqliteStore) -> Checkpoints | None:
    """The checkpoint store under the data dir, as `[checkpoints]` bounds it."""
    settings = config.checkpoints
    if not settings.enabled:
        return None
    limits = CheckpointLimits(settings.max_bytes, settings.max_file_bytes)
    reader = workspace_reader(env)
    folder = blob_folder(str(data_dir(env)))
    return Checkpoints(store, folder, reader, reader.home, own_dirs(env), limits)
