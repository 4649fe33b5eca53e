"""The parsed configuration: small frozen values, no I/O.

Every field mirrors one TOML key (see `loopd.config` for the file format). A value
that the files leave out is `None` (or an empty tuple) so the layer that consumes it
(the catalog builder, the engine limits) applies its own documented default and the
difference between "not configured" and "configured as the default" survives.

Secrets never live here: a provider names the environment variable that holds its
key (`api_key_env`); the variables loopd reads itself are `loopd.config.load`'s
`EnvSettings`. Which keys an untrusted file may set is declared here, on each key's
field (`UNTRUSTED`), and gathered by `loopd.config.gate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType

from loopd.policy.modes import Mode


class Harness(StrEnum):
    """Who runs a session's turns: loopd's own engine or a foreign agent CLI."""

    NATIVE = "native"
    CLAUDE = "claude"
    CODEX = "codex"
    ACP = "acp"


HARNESS_CLIS: Mapping[Harness, tuple[str, str, str]] = MappingProxyType(
    {
        Harness.CLAUDE: ("Claude Code", "claude", "npm install -g @anthropic-ai/claude-code"),
        Harness.CODEX: ("Codex", "codex", "npm install -g @openai/codex"),
    }
)
"""The foreign CLIs by harness: product name, command, how to install it (for the
messages that say what to do when it is missing)."""

CREDENTIALS = ("api_key", "cli_login", "none")  # the catalog's CredentialMode


class ProviderKind(StrEnum):
    """The wire format a native provider speaks."""

    ANTHROPIC = "anthropic"
    OPENAI_CHAT = "openai_chat"
    OPENAI_RESPONSES = "openai_responses"


UNTRUSTED = "untrusted"  # field metadata: the `Gate` of a key that may only tighten


class Gate(StrEnum):
    """What a key of an untrusted workspace file may do, declared on its field as
    `metadata={UNTRUSTED: Gate...}`. A key without one needs trust: a new key is
    inert in untrusted folders until it is declared as one that can only tighten."""

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


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """One model as configured: the id sent to the provider or CLI, plus the short
    names a person may type instead."""

    id: str
    aliases: tuple[str, ...] = ()
    description: str = ""
    context_window: int | None = None  # tokens; None: loopd's own knowledge
    credential: str | None = field(
        default=None,
        metadata={
            "choices": CREDENTIALS,
            "doc": "How this model is reached, if not as the runtime's other models are.",
        },
    )
    targets: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}),
        metadata={"doc": "Per effort, the model id sent instead of `id` (effort = id)."},
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", MappingProxyType(dict(self.targets)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Choices:
    """What a person may pick inside one runtime. `models`/`efforts` are `None` when
    the file does not set them, so the builder can fall back to built-in lists;
    `open_models` says whether a model id outside the list is accepted as is."""

    models: tuple[ModelSpec, ...] | None = None
    default_model: str | None = None
    small_model: str | None = field(
        default=None, metadata={"doc": "A model of this runtime for side work (a title)."}
    )
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
    mode: str | None = field(
        default=None,
        metadata={"choices": tuple(m.value for m in Mode), UNTRUSTED: Gate.STRICTER},
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """`[limits]`: the native engine's per-turn ceilings (issue 2 names the values).
    Each is honoured as written and 0 turns its check off (see
    `loopd.engine.limits.Limits`)."""

    # 0 turns these checks off, so an untrusted file may set or lower them, never
    # lift one to 0 (CAPS); max_parallel at 0 still runs calls one at a time.
    max_iterations: int = field(default=25, metadata={UNTRUSTED: Gate.CAPS})
    max_tool_calls: int = field(default=100, metadata={UNTRUSTED: Gate.CAPS})
    max_parallel: int = field(default=8, metadata={UNTRUSTED: Gate.LOWERS})
    max_result_bytes: int = field(default=100_000, metadata={UNTRUSTED: Gate.CAPS})
    max_identical_calls: int = field(default=3, metadata={UNTRUSTED: Gate.CAPS})
    turn_token_ceiling: int = field(default=0, metadata={UNTRUSTED: Gate.CAPS})  # 0: none
    # Not declared as tightening (they tune, they do not bound what the agent may do,
    # or, for the cost, are not whole numbers the gate compares): an untrusted
    # workspace file cannot set them.
    turn_cost_ceiling: float = 0.0  # USD, where the model's price is known; 0 = unlimited
    stream_idle_seconds: int = 60  # a model stream silent this long is stalled; 0 = never
    max_output_chars: int = 30_000  # a command's output as the model reads it
    max_shown_chars: int = 64_000  # a tool's output as the editor shows and the store keeps it


@dataclass(frozen=True, slots=True, kw_only=True)
class Approvals:
    """`[approvals]`: rule strings, kept verbatim (the policy layer interprets them),
    and how long a question waits for the person before it counts as a rejection."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = field(default=(), metadata={UNTRUSTED: Gate.ADDS})
    deny: tuple[str, ...] = field(default=(), metadata={UNTRUSTED: Gate.ADDS})
    timeout_seconds: int = field(default=600, metadata={UNTRUSTED: Gate.LOWERS})


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSettings:
    """`[sandbox]`: what commands may reach beyond the default boundary.
    `allow_unix_sockets` names Unix socket paths commands may connect to (see the
    README's Safety section for what a non-empty list changes); `home_readable` names
    entries of the home directory shown (read-only) to commands besides the built-in
    toolchain list. `allowed_domains` / `denied_domains` are network by domain
    (`loopd.policy.domains`): with either set, a sandboxed command reaches the
    network only through loopd's proxy; `allowed_domains = None` (unset) and no
    denied entries keep the network on/off as before."""

    allow_unix_sockets: tuple[str, ...] = ()
    home_readable: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] | None = None
    denied_domains: tuple[str, ...] = field(default=(), metadata={UNTRUSTED: Gate.ADDS})

    @property
    def by_domain(self) -> bool:
        """Whether commands' network goes through the proxy."""
        return self.allowed_domains is not None or bool(self.denied_domains)


@dataclass(frozen=True, slots=True, kw_only=True)
class DoneCriterion:
    """`[[done.criteria]]`: a command whose exit code says whether a turn is done."""

    name: str
    command: str
    exit_code: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    """`[done]`: the workspace's definition of done (see `loopd.engine.done`).
    `enabled` switches re-entry on unmet criteria on; off, they are checked and
    reported only. `protected` are globs of the paths that ARE the measurement."""

    enabled: bool = False
    protected: tuple[str, ...] = ()
    timeout_seconds: int = 300
    max_stall_cycles: int = 2
    criteria: tuple[DoneCriterion, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Delegate:
    """`[delegate]`: where a native session's `explore` child runs: a catalog entry
    (native) and a model in it. Unset: the session's own runtime and its default
    model. The older spelling of `[agents.explore]` `default` and `model`, which win
    where both are set."""

    runtime: str | None = None
    model: str | None = None


MAIN_AGENT = "main"  # the session's own agent
EXPLORE_AGENT = "explore"  # the read-only child the `explore` tool runs


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    """`[agents.<name>]`: one agent role's part of the catalog: the runtimes it may
    run on and what it runs on when nothing chooses. `main` is the session's own
    agent (`[defaults]` fills what it leaves out), `explore` the read-only child of
    the `explore` tool (`[delegate]` is its older spelling); any other name is a
    role the catalog knows and `loopd catalog` shows."""

    name: str
    runtimes: tuple[str, ...] | None = field(
        default=None,
        metadata={
            "distinct": True,
            "doc": "The catalog entries this agent may run on (default: every entry; "
            "for explore, every native entry).",
        },
    )
    default: str | None = field(
        default=None,
        metadata={
            "doc": "The entry it runs on when nothing chooses (default: the first of "
            "`runtimes`; for explore without `runtimes`, the session's own runtime)."
        },
    )
    model: str | None = field(
        default=None, metadata={"doc": "Its model on its default runtime (id or alias)."}
    )
    effort: str | None = field(default=None, metadata={"doc": "Its effort on its default runtime."})


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonSettings:
    """`[daemon]`, read from the user file only (by `loopd acp`/`loopd lsp` before
    anything else loads; see `loopd.daemon`): whether editors share one loopd
    daemon, and how long it stays without any."""

    enabled: bool = field(
        default=True, metadata={"doc": "false: every editor's loopd serves in its own process."}
    )
    idle_seconds: int = field(
        default=600, metadata={"doc": "The daemon exits after this long with no editor."}
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointSettings:
    """`[checkpoints]`: the workspace kept before each prompt, to rewind to
    (`loopd.checkpoints`). An untrusted workspace file cannot set these."""

    enabled: bool = field(default=True, metadata={"doc": "false: no checkpoints, no /rewind."})
    max_bytes: int = field(
        default=2 * 1024**3,
        metadata={"doc": "The checkpoint store's bound; past it a checkpoint is skipped."},
    )
    max_file_bytes: int = field(
        default=4 * 1024**2,
        metadata={"doc": "A larger file is left out of checkpoints (and named)."},
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceStatus:
    """The workspace file behind a config: whether it is trusted and, when it is not,
    which of its keys were ignored (dotted, as written in the file), or the
    `problem` that had the whole file ignored (an untrusted file never stops loopd).
    `content` is exactly the bytes `sha256` covers: what a trust question shows,
    with `runs`."""

    folder: str
    file: Path
    state: TrustState
    sha256: str
    ignored: tuple[str, ...] = ()
    problem: str = ""
    content: bytes = field(default=b"", repr=False)
    runs: tuple[tuple[str, str], ...] = ()  # what it runs, pinned (`loopd.config.pins`)
    fingerprint: str = ""  # of the bytes and the pins: what a yes must still find

    @property
    def notice(self) -> str:
        """What to tell the person, once; empty when nothing was ignored."""
        if not self.ignored and not self.problem:
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
        if self.problem:
            return f"{self.file} {why} and cannot be used ({self.problem}), so it was ignored."
        return (
            f"{self.file} {why}, so these of its settings were ignored: {keys}. "
            f"{then} `loopd trust {self.folder}`."
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The merged configuration. `sources` lists the files read, lowest precedence
    first, so `loopd doctor` can say where a setting came from; `origins` maps each
    dotted key to the file that set it, so a later check can name file and key."""

    defaults: Defaults = field(default_factory=Defaults)
    providers: Mapping[str, ProviderConfig] = field(default_factory=lambda: MappingProxyType({}))
    runtimes: Mapping[str, RuntimeConfig] = field(default_factory=lambda: MappingProxyType({}))
    limits: Limits = field(default_factory=Limits)
    approvals: Approvals = field(default_factory=Approvals)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    done: Done = field(default_factory=Done)
    delegate: Delegate = field(default_factory=Delegate)
    agents: Mapping[str, AgentConfig] = field(default_factory=lambda: MappingProxyType({}))
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    sources: tuple[Path, ...] = ()
    origins: Mapping[str, Path] = field(default_factory=dict, repr=False, compare=False)
    workspace: WorkspaceStatus | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "providers", MappingProxyType(dict(self.providers)))
        object.__setattr__(self, "runtimes", MappingProxyType(dict(self.runtimes)))
        object.__setattr__(self, "agents", MappingProxyType(dict(self.agents)))
        object.__setattr__(self, "origins", MappingProxyType(dict(self.origins)))

    def where(self, key: str) -> str:
        """`<file>: <dotted key>`, the prefix of an error about a configured value."""
        origin = self.origins.get(key)
        return f"{origin}: {key}" if origin is not None else key
