"""Composition root: the one place that names concrete classes.

`build_app` reads configuration and the environment, discovers the runtime catalog,
opens the shared session store and wires one `SessionManager` whose runtime
factories come from the catalog: a native engine per provider entry, and the foreign
CLIs found on this machine. Every frontend (`loopd run`, `loopd acp`, `loopd lsp`)
is a client of that manager.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loopd.catalog import CatalogBuild, RuntimeEntry, discover_catalog
from loopd.config import Config, data_dir, load_config
from loopd.config.schema import Harness
from loopd.engine.limits import Limits
from loopd.engine.loop import EngineConfig
from loopd.instructions import system_prompt
from loopd.policy.decide import RulePolicy
from loopd.policy.modes import MODES, parse_mode
from loopd.policy.network import NetworkGrant
from loopd.policy.rules import RuleSet
from loopd.protocol.events import PlanEntry, PlanUpdated
from loopd.providers.factory import ClosableProvider, make_provider
from loopd.runtimes.base import RuntimeContext, RuntimeFactory
from loopd.runtimes.claude import ClaudeRuntimeFactory, ClaudeSettings
from loopd.runtimes.codex import CodexRuntimeFactory, CodexSettings
from loopd.runtimes.native import ModeInfo, NativeRuntimeFactory, NativeWiring
from loopd.sandbox.probe import SandboxProbe, probe_sandbox, select_sandbox
from loopd.sessions.manager import SessionManager
from loopd.store.sqlite import SqliteStore
from loopd.tools.env import SystemClock, ToolEnv
from loopd.tools.registry import ToolRegistry


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class App:
    env: Mapping[str, str]
    config: Config
    catalog: CatalogBuild
    store: SqliteStore
    manager: SessionManager
    _providers: list[ClosableProvider] = field(default_factory=list)

    async def aclose(self) -> None:
        await self.manager.shutdown()
        for provider in self._providers:
            await provider.aclose()
        self.store.close()


def build_app(env: Mapping[str, str], cwd: str) -> App:
    config = load_config(env, Path(cwd))
    catalog = discover_catalog(config, env)
    store = SqliteStore(data_dir(env) / "sessions.db")
    providers: list[ClosableProvider] = []
    factories: dict[str, RuntimeFactory] = {}
    for entry in catalog.catalog:
        factory = _factory(entry, env, config, store, providers)
        if factory is not None:
            factories[entry.name] = factory
    manager = SessionManager(
        store=store,
        runtimes=factories,
        default_runtime=catalog.catalog.default or "",
        now=utc_now,
    )
    return App(env, config, catalog, store, manager, providers)


def _factory(
    entry: RuntimeEntry,
    env: Mapping[str, str],
    config: Config,
    store: SqliteStore,
    providers: list[ClosableProvider],
) -> RuntimeFactory | None:
    match entry.harness:
        case Harness.NATIVE:
            return NativeRuntimeFactory(
                entry.name, _native_wiring(entry, env, config, providers), store
            )
        case _:
            return None


def _native_wiring(
    entry: RuntimeEntry,
    env: Mapping[str, str],
    config: Config,
    providers: list[ClosableProvider],
) -> NativeWiring:
    ref = entry.provider
    assert ref is not None, "a native entry always has a provider"
    api_key = env.get(ref.api_key_env or "", "") if ref.api_key_env else ""
    provider = make_provider(ref.kind, base_url=ref.base_url, api_key=api_key)
    providers.append(provider)
    models = tuple(m.id for m in entry.models)
    default_model = entry.default_model or (models[0] if models else "default")
    rules = RuleSet.from_config(config.approvals.to_table())
    tools = functools.partial(_tools_for, env=env)
    return NativeWiring(
        provider_for=lambda model: provider,
        tools_for=tools,
        policy_for=functools.partial(_policy_for, rules=rules),
        system_for=lambda ctx: system_prompt(ctx.cwd, ctx.roots),
        clock=SystemClock(),
        modes=tuple(ModeInfo(m.mode.value, m.name, m.description) for m in MODES),
        default_mode=config.defaults.mode or "ask",
        models=models or (default_model,),
        default_model=default_model,
        engine=EngineConfig(model=default_model, limits=_limits(config)),
    )


def _limits(config: Config) -> Limits:
    c = config.limits
    return Limits(
        max_iterations=c.max_iterations,
        max_tool_calls=c.max_tool_calls,
        max_parallel=c.max_parallel,
        max_result_bytes=c.max_result_bytes,
        max_identical_calls=c.max_identical_calls,
        max_turn_tokens=c.max_turn_tokens,
    )


@functools.cache
def _probe(env_key: tuple[tuple[str, str], ...]) -> SandboxProbe:
    return probe_sandbox(env=dict(env_key))


def _tools_for(ctx: RuntimeContext, *, env: Mapping[str, str]) -> ToolRegistry:
    mode = parse_mode(ctx.config.get("mode", "ask"))
    probe = _probe(tuple(sorted(env.items())))
    grant = NetworkGrant()

    async def on_plan(entries: tuple[PlanEntry, ...]) -> None:
        await ctx.emitter.emit(PlanUpdated(entries))

    sandbox = select_sandbox(mode, probe, ctx.roots, grant, env)
    return ToolRegistry(ToolEnv(roots=ctx.roots, sandbox=sandbox, on_plan=on_plan))


def _policy_for(
    ctx: RuntimeContext, mode: str, remembered: Mapping[str, Any], *, rules: RuleSet
) -> RulePolicy:
    return RulePolicy(
        mode=parse_mode(mode),
        roots=ctx.roots,
        tier=_probe(tuple(sorted(os.environ.items()))).best,
        network=NetworkGrant(),
        rules=rules,
        remembered=RuleSet.from_json(remembered),
    )
