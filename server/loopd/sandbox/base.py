"""The seam between the shell tool and the OS sandbox.

The shell tool never decides how a command is contained; it asks a `CommandSandbox`
to prepare the argv, environment and child set-up, then spawns exactly that. Tiers
(bubblewrap, Landlock, network namespace, none) are implementations of this one
Protocol, chosen once per process by probing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from loopd.executables import clean_path, find_program


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
    """Exactly what to spawn. `preexec` runs in the child before exec (Landlock).
    `contained`: every process the command starts ends when it does (bubblewrap's pid
    namespace), so none can outlive it; elsewhere `setsid cmd &` leaves one behind
    that loopd cannot see."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    preexec: Callable[[], None] | None = field(default=None, compare=False)
    contained: bool = False


class CommandSandbox(Protocol):
    @property
    def tier(self) -> str: ...

    def prepare(self, spec: CommandSpec) -> PreparedCommand: ...


SAFE_ENV_KEYS = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER")


def outside_roots(program: str, spec: CommandSpec, env: Mapping[str, str]) -> str:
    """`program` as `find_program` finds it on `env`'s PATH, never beneath the
    command's roots, for what runs where files are not contained: what the person
    approved as `bash -c ...` is the machine's bash, not a repository's. A program
    not found there gets a path that cannot run, so it fails as not found."""
    found = find_program(program, env.get("PATH"), outside=(spec.cwd, *spec.writable_roots))
    return found or os.path.join("/nonexistent", os.path.basename(program))


def sanitized_env(base: Mapping[str, str], keep: Sequence[str] = SAFE_ENV_KEYS) -> dict[str, str]:
    """An environment built from scratch: only harmless variables survive, so provider
    keys and other secrets never reach a command; its PATH keeps absolute entries
    only (`clean_path`: a relative one finds programs in the command's folder)."""
    env = {k: base[k] for k in keep if k in base}
    env["PATH"] = clean_path(env.get("PATH", "/usr/local/bin:/usr/bin:/bin"))
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
        env = sanitized_env(self.base_env)
        argv = (outside_roots(spec.argv[0], spec, env), *spec.argv[1:])
        return PreparedCommand(argv, env, spec.cwd)
