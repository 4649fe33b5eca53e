"""The parsed configuration: small frozen values, no I/O.

Every field mirrors one TOML key (see `loopd.config` for the file format). A value
that the files leave out is `None` (or an empty tuple) so the layer that consumes it
(the catalog builder, the engine limits) applies its own documented default and the
difference between "not configured" and "configured as the default" survives.

Secrets never live here: a provider names the environment variable that holds its
key (`api_key_env`); `EnvSettings` holds the variables loopd reads itself, with the
keys kept out of `repr` so a logged config cannot leak them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType

from loopd.protocol.errors import ConfigError


class Harness(StrEnum):
    """Who runs a session's turns: loopd's own engine or a foreign agent CLI."""

    NATIVE = "native"
    CLAUDE = "claude"
    CODEX = "codex"
    ACP = "acp"


class ProviderKind(StrEnum):
    """The wire format a native provider speaks."""

    ANTHROPIC = "anthropic"
    OPENAI_CHAT = "openai_chat"
    OPENAI_RESPONSES = "openai_responses"


class Gate(StrEnum):
    """What a key of an untrusted workspace file may do. A key that `UNTRUSTED_KEYS`
    does not name needs trust: a new key is inert in untrusted folders until it is
    declared here as one that can only tighten."""

    ADDS = "adds"  # rules added to the user's, never replacing them ([approvals] deny)
    LOWERS = "lowers"  # a number that may go down, never up
    CAPS = "caps"  # a ceiling where 0 means none: may be set or lowered, never lifted
    STRICTER = "stricter"  # a mode no more permissive than the user's default


class TrustState(StrEnum):
    """Where a workspace config file stands (`loopd.config.trust`). Only `TRUSTED`
    lets every key apply."""

    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"  # never trusted, or trust withdrawn
    CHANGED = "changed"  # trusted once, but the file is no longer what was trusted


class ConfigFileError(ConfigError):
    """A config file holds a value loopd cannot use. `path` is the file the offending
    key came from (after merging, the file that set it last), `key` its dotted TOML
    path, `problem` what is wrong, in words meant for the person editing the file."""

    def __init__(self, path: Path | None, key: str, problem: str) -> None:
        where = f"{path}: " if path is not None else ""
        super().__init__(f"{where}{key}: {problem}")
        self.path = path
        self.key = key
        self.problem = problem


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """One model as configured: the id sent to the provider or CLI, plus the short
    names a person may type instead."""

    id: str
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Choices:
    """What a person may pick inside one runtime. `models`/`efforts` are `None` when
    the file does not set them, so the builder can fall back to built-in lists;
    `open_models` says whether a model id outside the list is accepted as is."""

    models: tuple[ModelSpec, ...] | None = None
    default_model: str | None = None
    efforts: tuple[str, ...] | None = None
    default_effort: str | None = None
    open_models: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderConfig:
    """`[providers.<name>]`: an endpoint the native engine can talk to."""

    name: str
    kind: ProviderKind
    base_url: str | None = None
    api_key_env: str | None = None
    anthropic_version: str | None = None
    description: str = ""
    choices: Choices = field(default_factory=Choices)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeConfig:
    """`[runtimes.<name>]`: a catalog entry. Foreign harnesses name a `command` (a
    path or a name looked up on PATH); a native runtime names a `provider`."""

    name: str
    harness: Harness
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    profile: str | None = None
    provider: str | None = None
    description: str = ""
    choices: Choices = field(default_factory=Choices)

    def __post_init__(self) -> None:
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Defaults:
    """`[defaults]`: what a session starts with when the client does not say."""

    runtime: str | None = None
    model: str | None = None
    effort: str | None = None
    mode: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """`[limits]`: the native engine's per-turn ceilings (issue 2 names the values)."""

    max_iterations: int = 25
    max_tool_calls: int = 100
    max_parallel: int = 8
    max_result_bytes: int = 100_000
    max_identical_calls: int = 3
    turn_token_ceiling: int = 0  # 0 = unlimited


@dataclass(frozen=True, slots=True, kw_only=True)
class Approvals:
    """`[approvals]`: rule strings, kept verbatim (the policy layer interprets them),
    and how long a question waits for the person before it counts as a rejection."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    timeout_seconds: int = 600


# What an untrusted workspace file may still say: only what tightens the boundary.
UNTRUSTED_KEYS: Mapping[tuple[str, str], Gate] = MappingProxyType(
    {
        ("approvals", "deny"): Gate.ADDS,
        ("approvals", "ask"): Gate.ADDS,
        ("approvals", "timeout_seconds"): Gate.LOWERS,
        ("limits", "max_iterations"): Gate.LOWERS,
        ("limits", "max_tool_calls"): Gate.LOWERS,
        ("limits", "max_parallel"): Gate.LOWERS,
        ("limits", "max_result_bytes"): Gate.LOWERS,
        ("limits", "max_identical_calls"): Gate.LOWERS,
        ("limits", "turn_token_ceiling"): Gate.CAPS,
        ("defaults", "mode"): Gate.STRICTER,
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvSettings:
    """The environment variables loopd reads itself. Keys stay out of `repr`."""

    anthropic_api_key: str | None = field(default=None, repr=False)
    anthropic_base_url: str | None = None
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    ollama_host: str | None = None
    loopd_home: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceStatus:
    """The workspace file behind a config: whether it is trusted and, when it is not,
    which of its keys were ignored (dotted, as written in the file)."""

    folder: str
    file: Path
    state: TrustState
    sha256: str
    ignored: tuple[str, ...] = ()

    @property
    def notice(self) -> str:
        """What to tell the person, once; empty when nothing was ignored."""
        if not self.ignored:
            return ""
        keys = ", ".join(self.ignored)
        match self.state:
            case TrustState.TRUSTED:
                return ""
            case TrustState.UNTRUSTED:
                why = "is not trusted"
                then = "If you trust this folder, run"
            case TrustState.CHANGED:
                why = "changed since you trusted it"
                then = "Review it; to trust it as it is now, run"
        return (
            f"{self.file} {why}, so these of its settings were ignored: {keys}. "
            f"{then} `loopd trust {self.folder}`."
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The merged configuration. `sources` lists the files read, lowest precedence
    first, so `loopd doctor` can say where a setting came from."""

    defaults: Defaults = field(default_factory=Defaults)
    providers: Mapping[str, ProviderConfig] = field(default_factory=lambda: MappingProxyType({}))
    runtimes: Mapping[str, RuntimeConfig] = field(default_factory=lambda: MappingProxyType({}))
    limits: Limits = field(default_factory=Limits)
    approvals: Approvals = field(default_factory=Approvals)
    sources: tuple[Path, ...] = ()
    workspace: WorkspaceStatus | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "providers", MappingProxyType(dict(self.providers)))
        object.__setattr__(self, "runtimes", MappingProxyType(dict(self.runtimes)))
