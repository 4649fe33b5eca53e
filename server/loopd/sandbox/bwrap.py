"""The bubblewrap tier: a command sees the machine read-only and only its roots writable.

The argv follows what Codex and Claude Code run, in an order that matters (later mounts
cover earlier ones):

    bwrap --new-session --die-with-parent
          --ro-bind / /  --dev /dev  [--proc /proc]  --tmpfs /tmp
          --bind ROOT ROOT ...                  writable roots (--ro-bind in plan mode)
          --bind PIN PIN ...                    git dirs and parents, pinned (`protect`)
          --ro-bind P P ...                     protected paths inside them (.git/config...)
          --tmpfs D --remount-ro D ...          missing protected folders, empty, frozen
          --ro-bind /dev/null F ...             secret files read as nothing
          --tmpfs D --remount-ro D ...          secret folders read as empty
          --unshare-pid --unshare-ipc --unshare-user[-try] [--disable-userns]
          [--unshare-net]                       unless the network is granted
          --chdir CWD -- ARGV

`--unshare-pid` makes the command's process tree die with it: when the command exits,
its pid namespace is torn down, so a background process cannot outlive it.
`--die-with-parent` kills everything if loopd dies; the `preexec` also sets the
parent-death signal before exec, because bwrap sets its own only after starting, too
late if the spawning thread is already gone. `--new-session` stops the command
from pushing keystrokes into a terminal (TIOCSTI). `/tmp` is a private, throwaway
tmpfs, so sockets of other programs (ssh-agent, X11) are not reachable there.

With `landlock=True` the command is started through the Landlock helper *inside* the
sandbox (see `landlock_syscalls`), which restricts itself and execs ARGV: the second
layer must come after bwrap, because a Landlock-restricted process cannot set up
namespaces.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from loopd.policy.network import NetworkGrant
from loopd.policy.paths import contains
from loopd.sandbox import landlock_syscalls
from loopd.sandbox.base import CommandSpec, PreparedCommand, sanitized_env
from loopd.sandbox.protect import protection
from loopd.sandbox.scan import Masks, scan
from loopd.sandbox.tiers import Tier

SANDBOX_TMP = "/tmp"
DOCKER_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock")


@dataclass(frozen=True, slots=True)
class BwrapFeatures:
    """What the installed bwrap and kernel support, found by `probe_sandbox`."""

    unshare_user: bool = True  # False: --unshare-user-try
    disable_userns: bool = True  # bwrap >= 0.8
    proc: bool = True  # False in containers that forbid mounting /proc


@dataclass(frozen=True, slots=True)
class BwrapSandbox:
    """`roots` are canonical; `read_only` is plan mode (roots mounted read-only).
    `network` is read at every `prepare`, so a grant given mid-turn applies to the next
    command."""

    base_env: Mapping[str, str]
    roots: tuple[str, ...]
    network: NetworkGrant
    home: str
    read_only: bool = False
    bwrap: str = "bwrap"
    features: BwrapFeatures = field(default_factory=BwrapFeatures)
    landlock: bool = False
    extra_secrets: tuple[str, ...] = ()

    @property
    def tier(self) -> str:
        return Tier.BWRAP_LANDLOCK if self.landlock else Tier.BWRAP

    def prepare(self, spec: CommandSpec) -> PreparedCommand:
        writable = () if self.read_only else tuple(dict.fromkeys(self.roots + spec.writable_roots))
        network = spec.network or self.network.granted
        masks = scan((*self.roots, spec.cwd), writable, self.home, self.extra_secrets)
        argv = [self.bwrap, *self._mounts(writable, spec.cwd, masks), *self._namespaces(network)]
        argv += ["--chdir", spec.cwd, "--", *self._inner(spec.argv, writable, network)]
        env = sanitized_env(self.base_env)
        env["TMPDIR"] = SANDBOX_TMP
        return PreparedCommand(tuple(argv), env, spec.cwd, landlock_syscalls.die_with_parent)

    def _mounts(self, writable: tuple[str, ...], cwd: str, masks: Masks) -> list[str]:
        args = ["--new-session", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev"]
        args += ["--proc", "/proc"] if self.features.proc else []
        args += ["--tmpfs", SANDBOX_TMP]
        for root in writable:
            args += ["--bind", root, root]
        needed = (*self.roots, cwd, *(_helper_files() if self.landlock else ()))
        for path in dict.fromkeys(needed):
            # Paths under /tmp were hidden by the tmpfs: show them again, read-only.
            if contains(SANDBOX_TMP, path) and not any(contains(w, path) for w in writable):
                args += ["--ro-bind", path, path]
        args += protection(writable, masks.protected, self.home).mounts()
        for path in (*masks.secret_files, *_existing(DOCKER_SOCKETS)):
            args += ["--ro-bind", "/dev/null", path]
        for path in masks.secret_dirs:
            args += ["--tmpfs", path, "--remount-ro", path]
        return args

    def _namespaces(self, network: bool) -> list[str]:
        args = ["--unshare-pid", "--unshare-ipc"]
        args.append("--unshare-user" if self.features.unshare_user else "--unshare-user-try")
        args += ["--disable-userns"] if self.features.disable_userns else []
        return args + ([] if network else ["--unshare-net"])

    def _inner(self, argv: tuple[str, ...], writable: tuple[str, ...], network: bool) -> list[str]:
        if not self.landlock:
            return list(argv)
        config = {"writable": [*writable, SANDBOX_TMP, "/dev/null"], "deny_network": not network}
        python, helper = _helper_files()
        return [python, "-I", "-S", helper, json.dumps(config), "--", *argv]


def _helper_files() -> tuple[str, str]:
    """The interpreter and the script that apply Landlock inside the sandbox."""
    return os.path.realpath(sys.executable), os.path.realpath(landlock_syscalls.__file__)


def _existing(paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(os.path.realpath(p) for p in paths if os.path.exists(p)))
