"""Typed catalog failures. Callers branch on the class and its fields.

    ConfigError (loopd.protocol.errors)
    └── CatalogError
        ├── InvalidCatalog      an entry, a catalog or a stored identity is malformed
        ├── UnknownAgent        no agent role of that name
        ├── UnknownRuntime      no entry of that name the agent may run on (or no default)
        ├── UnknownHarness      a harness name with no entry the agent may run on
        ├── UnknownModel        the entry does not offer that model (or has no default)
        └── UnsupportedEffort   the entry does not allow that effort

Messages name categories, fields and the choices that do exist, so the person can
fix the command line without reading the config.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Literal, Self

from loopd.config.load import HOW_TO_CONFIGURE
from loopd.config.schema import HARNESS_CLIS, MAIN_AGENT, Harness
from loopd.protocol.errors import ConfigError

NO_RUNTIME_HELP = (
    f"run `loopd login`; or {HOW_TO_CONFIGURE}; or declare a [providers.NAME] table in "
    "~/.config/loopd/config.toml or .loopd/config.toml; or put the claude or codex CLI on PATH"
)


ErrorKind = Literal[
    "invalid_catalog",
    "unknown_agent",
    "unknown_runtime",
    "unknown_harness",
    "unknown_model",
    "unsupported_effort",
]


class CatalogError(ConfigError):
    """Root of the catalog's errors. `kind` is one of a closed set, one per class, so
    a caller (or a client reading it off the wire) can branch without parsing text."""

    kind: ClassVar[ErrorKind]

    def located(self, where: str) -> Self:
        """This error, its message led by `where` (`<file>: <key>`, the configured
        value it is about); its class, kind and fields are unchanged."""
        self.args = (f"{where}: {self}", *self.args[1:])
        return self


class InvalidCatalog(CatalogError):
    kind = "invalid_catalog"

    def __init__(self, where: str, field: str, problem: str) -> None:
        super().__init__(f"{where}: {field}: {problem}")
        self.where = where
        self.field = field
        self.problem = problem


class UnknownAgent(CatalogError):
    kind = "unknown_agent"

    def __init__(self, agent: str, available: Iterable[str]) -> None:
        self.agent = agent
        self.available = tuple(available)
        choices = ", ".join(self.available) or "none"
        super().__init__(f"unknown agent {agent!r} (agents: {choices})")


def _for(agent: str | None) -> str:
    """How a message names the role, when it is not the session's own agent."""
    return f" for agent {agent!r}" if agent is not None and agent != MAIN_AGENT else ""


class UnknownRuntime(CatalogError):
    kind = "unknown_runtime"

    def __init__(
        self, runtime: str | None, available: Iterable[str], agent: str | None = None
    ) -> None:
        self.runtime = runtime
        self.available = tuple(available)
        self.agent = agent
        choices = ", ".join(self.available) or "none"
        if runtime is None:
            message = f"no default runtime is configured{_for(agent)} (available: {choices})"
        else:
            message = f"unknown runtime {runtime!r}{_for(agent)} (available: {choices})"
        super().__init__(message)


class UnknownHarness(CatalogError):
    kind = "unknown_harness"

    def __init__(self, harness: str, available: Iterable[str], agent: str | None = None) -> None:
        self.harness = harness
        self.available = tuple(available)
        self.agent = agent
        choices = ", ".join(self.available) or "none"
        super().__init__(
            f"no runtime with harness {harness!r} is available{_for(agent)} "
            f"(runtimes: {choices}){_enable(harness)}"
        )


def _enable(harness: str) -> str:
    """What makes a runtime of `harness` available, as the end of a message (nothing
    for a name that is no harness)."""
    try:
        known = Harness(harness)
    except ValueError:
        return ""
    match known:
        case Harness.NATIVE:
            return f": run `loopd login`; or {HOW_TO_CONFIGURE}"
        case Harness.CLAUDE | Harness.CODEX as cli:
            product, command, install = HARNESS_CLIS[cli]
            return f": install the {product} CLI ({install}) and put `{command}` on PATH"
        case Harness.ACP:
            return (
                ": declare one in ~/.config/loopd/config.toml "
                '([runtimes.NAME] with harness = "acp" and the agent\'s command)'
            )


class UnknownModel(CatalogError):
    kind = "unknown_model"

    def __init__(self, runtime: str, model: str | None, available: Iterable[str]) -> None:
        self.runtime = runtime
        self.model = model
        self.available = tuple(available)
        choices = ", ".join(self.available) or "none"
        if model is None:
            problem = "has no default model; choose one"
        else:
            problem = f"does not offer model {model!r}"
        super().__init__(f"runtime {runtime!r} {problem} (models: {choices})")


class UnsupportedEffort(CatalogError):
    kind = "unsupported_effort"

    def __init__(self, runtime: str, effort: str, allowed: Iterable[str]) -> None:
        self.runtime = runtime
        self.effort = effort
        self.allowed = tuple(allowed)
        choices = ", ".join(self.allowed) or "none"
        super().__init__(
            f"runtime {runtime!r} does not allow effort {effort!r} (allowed: {choices})"
        )
