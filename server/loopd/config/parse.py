"""Turn a merged TOML document into a validated `Config`.

Validation is strict on shape (unknown keys, wrong types, bad enum values all fail
with the file and dotted key named) and leaves meaning to the layer that owns it:
whether `default_model` names one of `models` is the catalog's check, because the
catalog also has built-in model lists the file may rely on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loopd.config import schema
from loopd.config.jsonschema import toml_keys
from loopd.config.merge import Merged
from loopd.config.table import NAME_RE, Table
from loopd.policy.domains import parse_rule
from loopd.policy.modes import Mode, parse_mode

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_config(merged: Merged, sources: tuple[Path, ...] = ()) -> schema.Config:
    """Validate a merged document. Raises `ConfigFileError` naming file and key."""
    root = Table(merged, merged.data, ())
    root.only(toml_keys(schema.Config))
    providers = {name: _provider(name, t) for name, t in root.table("providers").tables()}
    runtimes = {name: _runtime(name, t) for name, t in root.table("runtimes").tables()}
    return schema.Config(
        defaults=_defaults(root.table("defaults")),
        providers=providers,
        runtimes=runtimes,
        limits=_limits(root.table("limits")),
        approvals=_approvals(root.table("approvals")),
        sandbox=_sandbox(root.table("sandbox")),
        done=_done(root.table("done")),
        delegate=_delegate(root.table("delegate")),
        agents={name: _agent(name, t) for name, t in root.table("agents").tables()},
        daemon=_daemon(root.table("daemon")),
        checkpoints=_checkpoints(root.table("checkpoints")),
        sources=sources,
        origins={".".join(k): v for k, v in merged.origins.items() if v is not None},
    )


def _defaults(t: Table) -> schema.Defaults:
    t.only(toml_keys(schema.Defaults))
    return schema.Defaults(
        runtime=t.name("runtime"),
        model=t.text("model"),
        effort=t.text("effort"),
        mode=_mode(t, "mode"),
    )


def _mode(t: Table, key: str) -> str | None:
    """A mode id, a hyphenated spelling accepted (`accept-edits`) and stored as the id."""
    value = t.text(key)
    if value is None:
        return None
    try:
        return parse_mode(value).value
    except ValueError:
        choices = ", ".join(m.value for m in Mode)
        t.fail(key, f"unknown mode {value!r} (expected one of: {choices}; ask is the default)")


def _provider(name: str, t: Table) -> schema.ProviderConfig:
    t.only(toml_keys(schema.ProviderConfig))
    kind = t.enum("kind", schema.ProviderKind)
    if t.has("anthropic_version") and kind is not schema.ProviderKind.ANTHROPIC:
        t.fail("anthropic_version", 'only applies to kind = "anthropic"')
    return schema.ProviderConfig(
        name=name,
        kind=kind,
        base_url=_url(t, "base_url"),
        api_key_env=_env_name(t, "api_key_env"),
        anthropic_version=t.text("anthropic_version"),
        description=t.text("description") or "",
        choices=_choices(t),
    )


def _runtime(name: str, t: Table) -> schema.RuntimeConfig:
    t.only(toml_keys(schema.RuntimeConfig))
    harness = t.enum("harness", schema.Harness)
    if harness is schema.Harness.NATIVE:
        if t.has("command") or t.has("args"):
            t.fail("command", "a native runtime runs in-process; name a provider instead")
        if not t.has("provider"):
            t.fail("provider", 'is required for harness = "native"')
    elif t.has("provider"):
        t.fail("provider", f'only applies to harness = "native", not {harness.value!r}')
    if harness is schema.Harness.ACP and not t.has("command"):
        t.fail("command", 'is required for harness = "acp"')
    return schema.RuntimeConfig(
        name=name,
        harness=harness,
        command=t.text("command"),
        args=t.texts("args") or (),
        env=_env_table(t.table("env")),
        profile=t.name("profile"),
        provider=t.name("provider"),
        description=t.text("description") or "",
        choices=_choices(t),
    )


def _choices(t: Table) -> schema.Choices:
    return schema.Choices(
        models=_models(t),
        default_model=t.text("default_model"),
        small_model=t.text("small_model"),
        efforts=t.texts("efforts"),
        default_effort=t.text("default_effort"),
        open_models=t.flag("open_models"),
    )


def _models(t: Table) -> tuple[schema.ModelSpec, ...] | None:
    """`models` holds ids (`"gpt-5"`) or tables (`{ id = "...", aliases = [...] }`)."""
    items = t.array("models")
    if items is None:
        return None
    specs = []
    for index, item in enumerate(items):
        if isinstance(item, str) and item:
            specs.append(schema.ModelSpec(id=item))
            continue
        if not isinstance(item, Mapping):
            t.fail(f"models[{index}]", "must be a model id or a table with an `id`")
        entry = t.child(f"models[{index}]", item)
        entry.only(toml_keys(schema.ModelSpec))
        window = entry.number("context_window", 0)
        specs.append(
            schema.ModelSpec(
                id=entry.required_text("id"),
                aliases=entry.texts("aliases") or (),
                description=entry.text("description") or "",
                context_window=window or None,
                credential=_one_of(entry, "credential", schema.CREDENTIALS),
                targets=_targets(entry.table("targets")),
            )
        )
    return tuple(specs)


def _one_of(t: Table, key: str, allowed: tuple[str, ...]) -> str | None:
    value = t.text(key)
    if value is not None and value not in allowed:
        t.fail(key, f"unknown value {value!r} (expected one of: {', '.join(allowed)})")
    return value


def _targets(t: Table) -> dict[str, str]:
    """`targets = { high = "model-id-high" }`: effort names to model ids."""
    targets: dict[str, str] = {}
    for effort, target in t.items():
        if not NAME_RE.match(effort) or not isinstance(target, str) or not target.strip():
            t.fail(effort, 'must be EFFORT = "model id"')
        targets[effort] = target
    return targets


def _limits(t: Table) -> schema.Limits:
    defaults = schema.Limits()
    names = sorted(toml_keys(schema.Limits))
    t.only(frozenset(names))
    values: dict[str, Any] = {}
    for name in names:
        default = getattr(defaults, name)
        read = t.amount if isinstance(default, float) else t.number
        values[name] = read(name, default)
    return schema.Limits(**values)


def _approvals(t: Table) -> schema.Approvals:
    t.only(toml_keys(schema.Approvals))
    timeout = t.number("timeout_seconds", schema.Approvals().timeout_seconds)
    if timeout <= 0:
        t.fail("timeout_seconds", "must be a positive number of seconds")
    return schema.Approvals(
        allow=t.texts("allow") or (),
        ask=t.texts("ask") or (),
        deny=t.texts("deny") or (),
        timeout_seconds=timeout,
    )


def _sandbox(t: Table) -> schema.SandboxSettings:
    t.only(toml_keys(schema.SandboxSettings))
    sockets = t.texts("allow_unix_sockets") or ()
    for path in sockets:
        if not path.startswith("/"):
            t.fail("allow_unix_sockets", f"{path!r} is not an absolute path")
    readable = t.texts("home_readable") or ()
    for entry in readable:
        parts = [p for p in entry.removeprefix("~/").split("/") if p not in ("", ".")]
        if entry.startswith("/") or not parts or ".." in parts:
            t.fail("home_readable", f"{entry!r} is not an entry inside the home directory")
    allowed, denied = t.texts("allowed_domains"), t.texts("denied_domains") or ()
    for key, rules in (("allowed_domains", allowed or ()), ("denied_domains", denied)):
        for rule in rules:
            try:
                parse_rule(rule)
            except ValueError as err:
                t.fail(key, str(err))
    return schema.SandboxSettings(
        allow_unix_sockets=sockets,
        home_readable=readable,
        allowed_domains=allowed,
        denied_domains=denied,
    )


def _delegate(t: Table) -> schema.Delegate:
    t.only(toml_keys(schema.Delegate))
    return schema.Delegate(runtime=t.name("runtime"), model=t.text("model"))


def _agent(name: str, t: Table) -> schema.AgentConfig:
    """`[agents.NAME]`. Whether the runtimes it names exist is the catalog's check
    (a CLI may be missing on this machine); that `default` is one of them is not."""
    t.only(toml_keys(schema.AgentConfig))
    runtimes = t.texts("runtimes")
    for runtime in runtimes or ():
        if not NAME_RE.match(runtime):
            t.fail("runtimes", f"{runtime!r} is not a runtime name")
    if runtimes is not None and len(set(runtimes)) != len(runtimes):
        t.fail("runtimes", "names a runtime twice")
    if runtimes == ():
        t.fail("runtimes", "is empty: name at least one runtime (or leave it out for all)")
    default = t.name("default")
    if default is not None and runtimes is not None and default not in runtimes:
        t.fail("default", f"{default!r} is not one of runtimes")
    return schema.AgentConfig(
        name=name,
        runtimes=runtimes,
        default=default,
        model=t.text("model"),
        effort=t.text("effort"),
    )


def _done(t: Table) -> schema.Done:
    t.only(toml_keys(schema.Done))
    defaults = schema.Done()
    timeout = t.number("timeout_seconds", defaults.timeout_seconds)
    if timeout <= 0:
        t.fail("timeout_seconds", "must be a positive number of seconds")
    criteria: list[schema.DoneCriterion] = []
    for index, item in enumerate(t.array("criteria") or ()):
        if not isinstance(item, Mapping):
            t.fail(f"criteria[{index}]", "must be a table with a name and a command")
        entry = t.child(f"criteria[{index}]", item)
        entry.only(toml_keys(schema.DoneCriterion))
        name = entry.required_text("name")
        if any(c.name == name for c in criteria):
            entry.fail("name", f"{name!r} names another criterion too")
        code = entry.integer("exit_code", 0)
        criteria.append(
            schema.DoneCriterion(name=name, command=entry.required_text("command"), exit_code=code)
        )
    return schema.Done(
        enabled=bool(t.flag("enabled")),
        protected=t.texts("protected") or (),
        timeout_seconds=timeout,
        max_stall_cycles=t.number("max_stall_cycles", defaults.max_stall_cycles),
        criteria=tuple(criteria),
    )


def _url(t: Table, key: str) -> str | None:
    value = t.text(key)
    if value is not None and not value.startswith(("http://", "https://")):
        t.fail(key, "must start with http:// or https://")
    return value


def _env_name(t: Table, key: str) -> str | None:
    value = t.text(key)
    if value is not None and not _ENV_NAME_RE.match(value):
        t.fail(key, "must be an environment variable name")
    return value


def _env_table(t: Table) -> dict[str, str]:
    env: dict[str, str] = {}
    for key, value in t.items():
        if not _ENV_NAME_RE.match(key) or not isinstance(value, str):
            t.fail(key, 'must be NAME = "string" with an environment variable name')
        env[key] = value
    return env


def _daemon(t: Table) -> schema.DaemonSettings:
    t.only(toml_keys(schema.DaemonSettings))
    enabled = t.flag("enabled")
    return schema.DaemonSettings(
        enabled=True if enabled is None else enabled,
        idle_seconds=t.number("idle_seconds", schema.DaemonSettings().idle_seconds),
    )


def _checkpoints(t: Table) -> schema.CheckpointSettings:
    t.only(toml_keys(schema.CheckpointSettings))
    enabled, default = t.flag("enabled"), schema.CheckpointSettings()
    return schema.CheckpointSettings(
        enabled=True if enabled is None else enabled,
        max_bytes=t.number("max_bytes", default.max_bytes),
        max_file_bytes=t.number("max_file_bytes", default.max_file_bytes),
    )
