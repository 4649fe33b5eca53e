"""Typed catalog failures. Callers branch on the class and its fields.

    ConfigError (loopd.protocol.errors)
    └── CatalogError
        ├── InvalidCatalog      an entry, a catalog or a stored identity is malformed
        ├── UnknownRuntime      no entry of that name (or no default to fall back on)
        ├── UnknownHarness      a harness name with no entry in this catalog
        ├── UnknownModel        the entry does not offer that model (or has no default)
        └── UnsupportedEffort   the entry does not allow that effort

Messages name categories, fields and the choices that do exist, so the person can
fix the command line without reading the config.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Literal

from loopd.config.load import HOW_TO_CONFIGURE
from loopd.protocol.errors import ConfigError

NO_RUNTIME_HELP = (
    f"run `loopd login`; or {HOW_TO_CONFIGURE}; or declare a [providers.NAME] table in "
    "~/.config/loopd/config.toml or .loopd/config.toml; or put the claude or codex CLI on PATH"
)


ErrorKind = Literal[
    "invalid_catalog", "unknown_runtime", "unknown_harness", "unknown_model", "unsupported_effort"
]


class CatalogError(ConfigError):
    """Root of the catalog's errors. `kind` is one of a closed set, one per class, so
    a caller (or a client reading it off the wire) can branch without parsing text."""

    kind: ClassVar[ErrorKind]


class InvalidCatalog(CatalogError):
    kind = "invalid_catalog"

    def __init__(self, where: str, field: str, problem: str) -> None:
        super().__init__(f"{where}: {field}: {problem}")
        self.where = where
        self.field = field
        self.problem = problem


class UnknownRuntime(CatalogError):
    kind = "unknown_runtime"

    def __init__(self, runtime: str | None, available: Iterable[str]) -> None:
        self.runtime = runtime
        self.available = tuple(available)
        choices = ", ".join(self.available) or "none"
        if runtime is None:
            message = f"no default runtime is configured (available: {choices})"
        else:
            message = f"unknown runtime {runtime!r} (available: {choices})"
        super().__init__(message)


class UnknownHarness(CatalogError):
    kind = "unknown_harness"

    def __init__(self, harness: str, available: Iterable[str]) -> None:
        self.harness = harness
        self.available = tuple(available)
        choices = ", ".join(self.available) or "none"
        super().__init__(f"no runtime with harness {harness!r} is available (runtimes: {choices})")


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
