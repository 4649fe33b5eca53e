"""How a native catalog entry is wired from the configuration, and the bounds every
runtime shares: part of the composition root (`loopd.app`), which calls it.

`native_wiring` gives a native entry everything its sessions are built from: the
provider (closed by the app, so it goes on the app's list), the `explore` child's
runtime, each session's guarded parts, its system prompt, instruction chain and
skills, and the engine's limits. `boundary`, `rules_table` and `tool_limits` are
what a child ACP agent is held to as well; `workspace_reader` and `own_dirs` are
how loopd reads a workspace on its own and which of its folders nothing reads.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast, get_args

from loopd.catalog import CatalogError, RuntimeCatalog, RuntimeEntry
from loopd.catalog.listing import listing_for, lists_models, no_model_help
from loopd.catalog.roles import roles_of
from loopd.config import Config, data_dir, user_config_file
from loopd.config.schema import EXPLORE_AGENT
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
from loopd.runtimes.native.instructions import read_chain, read_guides, system_prompt
from loopd.runtimes.native.parts import GuardedParts, LazyProbe
from loopd.runtimes.native.wiring import NativeWiring
from loopd.sandbox.probe import Boundary
from loopd.tools.env import SystemClock, ToolLimits
from loopd.tools.skills import SkillShelf


def native_wiring(
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
    rules = RuleSet.from_config(rules_table(config))
    child = _explore_child(catalog, entry, ChildRuntime(provider, default_model), config, env)
    reader = workspace_reader(env)
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
            limits=tool_limits(config),
            boundary=boundary(env, config),
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


def boundary(env: Mapping[str, str], config: Config) -> Boundary:
    """What every session's sandbox hides and lets through, native or a child's."""
    return Boundary(
        private=own_dirs(env),
        home_readable=config.sandbox.home_readable,
        unix_sockets=config.sandbox.allow_unix_sockets,
        domains=_domains(config),
    )


def _domains(config: Config) -> DomainLists | None:
    """The parsed domain lists, when network by domain is configured (the parser
    already refused a rule it cannot read)."""
    settings = config.sandbox
    if not settings.by_domain:
        return None
    return DomainLists.parse(settings.allowed_domains or (), settings.denied_domains)


def workspace_reader(env: Mapping[str, str]) -> DiskReader:
    """The rules of every read loopd makes of a workspace or a home on its own
    (instruction files, skills): the file tools' secrets, loopd's own folders
    included; each use gives its roots."""
    return DiskReader((), home=os.path.realpath(home_path(env)), secrets=own_dirs(env))


def own_dirs(env: Mapping[str, str]) -> tuple[str, ...]:
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


def rules_table(config: Config) -> dict[str, Any]:
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


def tool_limits(config: Config) -> ToolLimits:
    c = config.limits
    return ToolLimits(output_max_chars=c.max_output_chars, shown_max_chars=c.max_shown_chars)
