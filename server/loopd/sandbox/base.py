"""The seam between the shell tool and the OS sandbox.

The shell tool never decides how a command is contained; it asks a `CommandSandbox`
to prepare the argv, environment and child set-up, then spawns exactly that. Tiers
(bubblewrap, Landlock, network namespace, none) are implementations of this one
Protocol, chosen once per process by probing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """What a command may touch. Paths are absolute and canonical. `proxy` is the
    host path of the network proxy's socket (`loopd.sandbox.netgate`): a tier that
    can bind it in gives the command that network and no other; the others ignore
    it, and their network stays `network`."""

    argv: tuple[str, ...]
    cwd: str
    writable_roots: tuple[str, ...] = ()
    network: bool = False
    proxy: str | None = None


@dataclass(frozen=True, slots=True)
class PreparedCommand:
    """Exactly what to spawn. `preexec` runs in the child before exec (Landlock)."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    preexec: Callable[[], None] | None = field(default=None, compare=False)


class CommandSandbox(Protocol):
    @property
    def tier(self) -> str: ...

    def prepare(self, spec: CommandSpec) -> PreparedCommand: ...


SAFE_ENV_KEYS = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER")


def sanitized_env(base: Mapping[str, str], keep: Sequence[str] = SAFE_ENV_KEYS) -> dict[str, str]:
    """An environment built from scratch: only harmless variables survive, so provider
    keys and other secrets never reach a command."""
    env = {k: base[k] for k in keep if k in base}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


@dataclass(frozen=True, slots=True)
class Unsandboxed:
    """The `none` tier: the command runs as is, with a scrubbed environment. Every
    non-safe command must then be approved by the person."""

    base_env: Mapping[str, str]

    @property
    def tier(self) -> str:
        return "none"

    def prepare(self, spec: CommandSpec) -> PreparedCommand:
        return PreparedCommand(spec.argv, sanitized_env(self.base_env), spec.cwd)
