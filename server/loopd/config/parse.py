"""Turn a merged TOML document into a validated `Config`.

Validation is strict on shape (unknown keys, wrong types, bad enum values all fail
with the file and dotted key named) and leaves meaning to the layer that owns it:
whether `default_model` names one of `models` is the catalog's check, because the
catalog also has built-in model lists the file may rely on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from loopd.config.jsonschema import toml_keys
from loopd.config.merge import KeyPath, Merged
from loopd.config.schema import (
    CREDENTIALS,
    Approvals,
    Choices,
    Config,
    ConfigFileError,
    DaemonSettings,
    Defaults,
    Delegate,
    Done,
    DoneCriterion,
    Harness,
    Limits,
    ModelSpec,
    ProviderConfig,
    ProviderKind,
    RuntimeConfig,
    SandboxSettings,
)
from loopd.policy.modes import Mode, parse_mode

E = TypeVar("E", bound=StrEnum)

# Names of providers and runtimes: what a person types after `--runtime`.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Table:
    """One TOML table being read, with enough context to blame the right file."""

    def __init__(self, merged: Merged, data: Mapping[str, Any], key: KeyPath) -> None:
        self._merged = merged
        self._data = data
        self.key = key

    def fail(self, key: str | None, problem: str) -> NoReturn:
        path = self.key if key is None else (*self.key, key)
        raise ConfigFileError(self._merged.origin(path), ".".join(path), problem)

    def only(self, allowed: frozenset[str]) -> None:
        for key in sorted(self._data):
            if key not in allowed:
                self.fail(key, f"unknown key (expected one of: {', '.join(sorted(allowed))})")

    def has(self, key: str) -> bool:
        return key in self._data

    def text(self, key: str) -> str | None:
        return self.required_text(key) if key in self._data else None

    def required_text(self, key: str) -> str:
        value = self._data.get(key)
        if value is None:
            self.fail(key, "is required")
        if not isinstance(value, str) or not value.strip():
            self.fail(key, "must be a non-empty string")
        return value

    def name(self, key: str) -> str | None:
        value = self.text(key)
        if value is not None and not NAME_RE.match(value):
            self.fail(key, "must be a name of letters, digits, '.', '_' or '-'")
        return value

    def enum(self, key: str, kind: type[E]) -> E:
        value = self.required_text(key)
        try:
            return kind(value)
        except ValueError:
            choices = ", ".join(member.value for member in kind)
            self.fail(key, f"unknown value {value!r} (expected one of: {choices})")

    def texts(self, key: str) -> tuple[str, ...] | None:
        value = self._data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(key, "must be a list of non-empty strings")
        return tuple(value)

    def number(self, key: str, default: int) -> int:
        value = self._data.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            self.fail(key, "must be a whole number, zero or more")
        return value

    def amount(self, key: str, default: float) -> float:
        value = self._data.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
            self.fail(key, "must be a number, zero or more")
        return float(value)

    def integer(self, key: str, default: int) -> int:
        value = self._data.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 255:
            self.fail(key, "must be an exit code, 0 to 255")
        return value

    def flag(self, key: str) -> bool | None:
        value = self._data.get(key)
        if value is not None and not isinstance(value, bool):
            self.fail(key, "must be true or false")
        return value

    def table(self, key: str) -> _Table:
        value = self._data.get(key, {})
        if not isinstance(value, Mapping):
            self.fail(key, "must be a table")
        return _Table(self._merged, value, (*self.key, key))

    def tables(self) -> Iterator[tuple[str, _Table]]:
        """Each sub-table, in name order; every value must be a table with a valid name."""
        for name in sorted(self._data):
            if not NAME_RE.match(name):
                self.fail(name, "must be a name of letters, digits, '.', '_' or '-'")
            yield name, self.table(name)

    def child(self, label: str, data: Mapping[str, Any]) -> _Table:
        """A table nested in a list (a model spec), read with this table's origin."""
        return _Table(self._merged, data, (*self.key, label))

    def items(self) -> list[tuple[str, Any]]:
        return sorted(self._data.items())

    def array(self, key: str) -> list[Any] | None:
        value = self._data.get(key)
        if value is not None and not isinstance(value, list):
            self.fail(key, "must be a list")
        return value


def parse_config(merged: Merged, sources: tuple[Path, ...] = ()) -> Config:
    """Validate a merged document. Raises `ConfigFileError` naming file and key."""
    root = _Table(merged, merged.data, ())
    root.only(toml_keys(Config))
    providers = {name: _provider(name, t) for name, t in root.table("providers").tables()}
    runtimes = {name: _runtime(name, t) for name, t in root.table("runtimes").tables()}
    return Config(
        defaults=_defaults(root.table("defaults")),
        providers=providers,
        runtimes=runtimes,
        limits=_limits(root.table("limits")),
        approvals=_approvals(root.table("approvals")),
        sandbox=_sandbox(root.table("sandbox")),
        done=_done(root.table("done")),
        delegate=_delegate(root.table("delegate")),
        daemon=_daemon(root.table("daemon")),
        sources=sources,
        origins={".".join(k): v for k, v in merged.origins.items() if v is not None},
    )


def _defaults(t: _Table) -> Defaults:
    t.only(toml_keys(Defaults))
    return Defaults(
        runtime=t.name("runtime"),
        model=t.text("model"),
        effort=t.text("effort"),
        mode=_mode(t, "mode"),
    )


def _mode(t: _Table, key: str) -> str | None:
    """A mode id, a hyphenated spelling accepted (`accept-edits`) and stored as the id."""
    value = t.text(key)
    if value is None:
        return None
    try:
        return parse_mode(value).value
    except ValueError:
        choices = ", ".join(m.value for m in Mode)
        t.fail(key, f"unknown mode {value!r} (expected one of: {choices}; ask is the default)")


def _provider(name: str, t: _Table) -> ProviderConfig:
    t.only(toml_keys(ProviderConfig))
    kind = t.enum("kind", ProviderKind)
    if t.has("anthropic_version") and kind is not ProviderKind.ANTHROPIC:
        t.fail("anthropic_version", 'only applies to kind = "anthropic"')
    return ProviderConfig(
        name=name,
        kind=kind,
        base_url=_url(t, "base_url"),
        api_key_env=_env_name(t, "api_key_env"),
        anthropic_version=t.text("anthropic_version"),
        description=t.text("description") or "",
        choices=_choices(t),
    )


def _runtime(name: str, t: _Table) -> RuntimeConfig:
    t.only(toml_keys(RuntimeConfig))
    harness = t.enum("harness", Harness)
    if harness is Harness.NATIVE:
        if t.has("command") or t.has("args"):
            t.fail("command", "a native runtime runs in-process; name a provider instead")
        if not t.has("provider"):
            t.fail("provider", 'is required for harness = "native"')
    elif t.has("provider"):
        t.fail("provider", f'only applies to harness = "native", not {harness.value!r}')
    if harness is Harness.ACP and not t.has("command"):
        t.fail("command", 'is required for harness = "acp"')
    return RuntimeConfig(
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


def _choices(t: _Table) -> Choices:
    return Choices(
        models=_models(t),
        default_model=t.text("default_model"),
        small_model=t.text("small_model"),
        efforts=t.texts("efforts"),
        default_effort=t.text("default_effort"),
        open_models=t.flag("open_models"),
    )


def _models(t: _Table) -> tuple[ModelSpec, ...] | None:
    """`models` holds ids (`"gpt-5"`) or tables (`{ id = "...", aliases = [...] }`)."""
    items = t.array("models")
    if items is None:
        return None
    specs = []
    for index, item in enumerate(items):
        if isinstance(item, str) and item:
            specs.append(ModelSpec(id=item))
            continue
        if not isinstance(item, Mapping):
            t.fail(f"models[{index}]", "must be a model id or a table with an `id`")
        entry = t.child(f"models[{index}]", item)
        entry.only(toml_keys(ModelSpec))
        window = entry.number("context_window", 0)
        specs.append(
            ModelSpec(
                id=entry.required_text("id"),
                aliases=entry.texts("aliases") or (),
                description=entry.text("description") or "",
                context_window=window or None,
                credential=_one_of(entry, "credential", CREDENTIALS),
                targets=_targets(entry.table("targets")),
            )
        )
    return tuple(specs)


def _one_of(t: _Table, key: str, allowed: tuple[str, ...]) -> str | None:
    value = t.text(key)
    if value is not None and value not in allowed:
        t.fail(key, f"unknown value {value!r} (expected one of: {', '.join(allowed)})")
    return value


def _targets(t: _Table) -> dict[str, str]:
    """`targets = { high = "model-id-high" }`: effort names to model ids."""
    targets: dict[str, str] = {}
    for effort, target in t.items():
        if not NAME_RE.match(effort) or not isinstance(target, str) or not target.strip():
            t.fail(effort, 'must be EFFORT = "model id"')
        targets[effort] = target
    return targets


def _limits(t: _Table) -> Limits:
    defaults = Limits()
    names = sorted(toml_keys(Limits))
    t.only(frozenset(names))
    values: dict[str, Any] = {}
    for name in names:
        default = getattr(defaults, name)
        read = t.amount if isinstance(default, float) else t.number
        values[name] = read(name, default)
    return Limits(**values)


def _approvals(t: _Table) -> Approvals:
    t.only(toml_keys(Approvals))
    timeout = t.number("timeout_seconds", Approvals().timeout_seconds)
    if timeout <= 0:
        t.fail("timeout_seconds", "must be a positive number of seconds")
    return Approvals(
        allow=t.texts("allow") or (),
        ask=t.texts("ask") or (),
        deny=t.texts("deny") or (),
        timeout_seconds=timeout,
    )


def _sandbox(t: _Table) -> SandboxSettings:
    t.only(toml_keys(SandboxSettings))
    sockets = t.texts("allow_unix_sockets") or ()
    for path in sockets:
        if not path.startswith("/"):
            t.fail("allow_unix_sockets", f"{path!r} is not an absolute path")
    readable = t.texts("home_readable") or ()
    for entry in readable:
        parts = [p for p in entry.removeprefix("~/").split("/") if p not in ("", ".")]
        if entry.startswith("/") or not parts or ".." in parts:
            t.fail("home_readable", f"{entry!r} is not an entry inside the home directory")
    return SandboxSettings(allow_unix_sockets=sockets, home_readable=readable)


def _delegate(t: _Table) -> Delegate:
    t.only(toml_keys(Delegate))
    return Delegate(runtime=t.name("runtime"), model=t.text("model"))


def _done(t: _Table) -> Done:
    t.only(toml_keys(Done))
    defaults = Done()
    timeout = t.number("timeout_seconds", defaults.timeout_seconds)
    if timeout <= 0:
        t.fail("timeout_seconds", "must be a positive number of seconds")
    criteria: list[DoneCriterion] = []
    for index, item in enumerate(t.array("criteria") or ()):
        if not isinstance(item, Mapping):
            t.fail(f"criteria[{index}]", "must be a table with a name and a command")
        entry = t.child(f"criteria[{index}]", item)
        entry.only(toml_keys(DoneCriterion))
        name = entry.required_text("name")
        if any(c.name == name for c in criteria):
            entry.fail("name", f"{name!r} names another criterion too")
        code = entry.integer("exit_code", 0)
        criteria.append(
            DoneCriterion(name=name, command=entry.required_text("command"), exit_code=code)
        )
    return Done(
        enabled=bool(t.flag("enabled")),
        protected=t.texts("protected") or (),
        timeout_seconds=timeout,
        max_stall_cycles=t.number("max_stall_cycles", defaults.max_stall_cycles),
        criteria=tuple(criteria),
    )


def _url(t: _Table, key: str) -> str | None:
    value = t.text(key)
    if value is not None and not value.startswith(("http://", "https://")):
        t.fail(key, "must start with http:// or https://")
    return value


def _env_name(t: _Table, key: str) -> str | None:
    value = t.text(key)
    if value is not None and not _ENV_NAME_RE.match(value):
        t.fail(key, "must be an environment variable name")
    return value


def _env_table(t: _Table) -> dict[str, str]:
    env: dict[str, str] = {}
    for key, value in t.items():
        if not _ENV_NAME_RE.match(key) or not isinstance(value, str):
            t.fail(key, 'must be NAME = "string" with an environment variable name')
        env[key] = value
    return env


def _daemon(t: _Table) -> DaemonSettings:
    t.only(toml_keys(DaemonSettings))
    enabled = t.flag("enabled")
    return DaemonSettings(
        enabled=True if enabled is None else enabled,
        idle_seconds=t.number("idle_seconds", DaemonSettings().idle_seconds),
    )
