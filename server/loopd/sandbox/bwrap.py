"""The bubblewrap tier: a command sees the machine read-only and only its roots writable.

The argv follows what Codex and Claude Code run, in an order that matters (later mounts
cover earlier ones):

    bwrap --new-session --die-with-parent
          --ro-bind / /  --dev /dev  [--proc /proc]  --tmpfs /tmp
          --tmpfs HOME --tmpfs PARENT ...       hidden folders (`loopd.sandbox.hide`)
          --ro-bind SRC DST ...                 what is shown back in them (toolchains)
          --bind ROOT ROOT ...                  writable roots (--ro-bind in plan mode)
          --tmpfs OWN ...                       loopd's own data and config
          --bind PIN PIN ...                    git dirs and parents, pinned (`protect`)
          --ro-bind P P ...                     protected paths inside them (.git/config...)
          --tmpfs D --remount-ro D ...          missing protected folders, empty, frozen
          --ro-bind /dev/null F ...             secret files read as nothing
          --tmpfs D --remount-ro D ...          secret folders read as empty
          --unshare-pid --unshare-ipc --cap-drop ALL --unshare-user[-try] [--disable-userns]
          [--unshare-net]                       unless the network is granted
          [--seccomp 3]                         unless Unix sockets are listed
          --chdir CWD -- [HELPER CONFIG --] ARGV

With a network proxy (`CommandSpec.proxy`, network by domain) the network is always
unshared, the proxy's socket is bound in read-only (`relay.INSIDE_SOCKET`) and the
helper runs: it starts the in-sandbox relay (`loopd.sandbox.relay`) on the private
loopback, then installs the socket filter itself, and the proxy variables point
clients at the relay. A granted network never applies then: the proxy is the only
way out.

`--unshare-pid` makes the command's process tree die with it: when the command exits,
its pid namespace is torn down, so a background process cannot outlive it.
`--die-with-parent` kills everything if loopd dies; the `preexec` also sets the
parent-death signal before exec, because bwrap sets its own only after starting, too
late if the spawning thread is already gone. `--new-session` stops the command
from pushing keystrokes into a terminal (TIOCSTI). `/tmp` is a private, throwaway
tmpfs, so sockets of other programs (ssh-agent, X11) are not reachable there.

Unless `unix_sockets` lists sockets to allow, commands cannot create Unix sockets
(`loopd.sandbox.seccomp`): bwrap loads the filter itself (`--seccomp 3`), from a private
file that a `sh` in front opens as fd 3, so the argv stays self-contained (no file
descriptor to pass) and an editor terminal can run it as is. With `landlock=True` the
command is started through the helper *inside* the sandbox (see `landlock_syscalls`),
which applies Landlock and the filter and execs ARGV: that layer must come after bwrap,
because a Landlock-restricted process cannot set up namespaces.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from loopd.executables import find_program
from loopd.policy.network import NetworkGrant
from loopd.policy.secrets import contains
from loopd.policy.tiers import Tier
from loopd.sandbox import landlock_syscalls, relay
from loopd.sandbox.base import CommandSpec, PreparedCommand, sanitized_env
from loopd.sandbox.hide import Hidden, covered_by, hidden_view
from loopd.sandbox.protect import protection
from loopd.sandbox.scan import Masks, scan
from loopd.sandbox.seccomp import filter_file, unix_socket_filter

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
    command. `extra_secrets` are loopd's own folders (hidden); `home_readable` adds to
    what is shown of the home directory; `unix_sockets` lists sockets commands may
    connect to (non-empty: the socket filter is off, see `loopd.sandbox.hide`)."""

    base_env: Mapping[str, str]
    roots: tuple[str, ...]
    network: NetworkGrant
    home: str
    read_only: bool = False
    bwrap: str = "bwrap"
    features: BwrapFeatures = field(default_factory=BwrapFeatures)
    landlock: bool = False
    extra_secrets: tuple[str, ...] = ()
    home_readable: tuple[str, ...] = ()
    unix_sockets: tuple[str, ...] = ()

    @property
    def tier(self) -> str:
        return Tier.BWRAP_LANDLOCK if self.landlock else Tier.BWRAP

    def prepare(self, spec: CommandSpec) -> PreparedCommand:
        writable = () if self.read_only else tuple(dict.fromkeys(self.roots + spec.writable_roots))
        network = (spec.network or self.network.granted) and spec.proxy is None
        masks = scan((*self.roots, spec.cwd), writable, self.home, self.extra_secrets)
        hidden = hidden_view(
            self.home, self.roots, self.extra_secrets, self.home_readable, self.unix_sockets
        )
        helper = self.landlock or spec.proxy is not None
        mounts = self._mounts(writable, spec, masks, hidden, helper)
        argv = [self.bwrap, *mounts, *self._namespaces(network)]
        by_bwrap = not self.unix_sockets and not helper  # else the helper filters
        argv += ["--seccomp", "3"] if by_bwrap else []
        inner = self._inner(spec.argv, writable, network, spec.proxy) if helper else spec.argv
        argv += ["--chdir", spec.cwd, "--", *inner]
        if by_bwrap:
            sh = find_program("sh", self.base_env.get("PATH"), outside=writable) or "/bin/sh"
            argv = [sh, "-c", 'exec "$@" 3<"$0"', filter_file(), *argv]
        env = sanitized_env(self.base_env)
        env["TMPDIR"] = SANDBOX_TMP
        if spec.proxy is not None:
            env |= relay.proxy_env()
        return PreparedCommand(
            tuple(argv), env, spec.cwd, landlock_syscalls.die_with_parent, contained=True
        )  # --unshare-pid: the command's whole tree ends with it

    def _mounts(
        self,
        writable: tuple[str, ...],
        spec: CommandSpec,
        masks: Masks,
        hidden: Hidden,
        helper: bool,
    ) -> list[str]:
        cwd = spec.cwd
        args = ["--new-session", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev"]
        args += ["--proc", "/proc"] if self.features.proc else []
        args += ["--tmpfs", SANDBOX_TMP]
        if spec.proxy is not None:
            args += ["--ro-bind", spec.proxy, relay.INSIDE_SOCKET]
        for path in hidden.tmpfs:
            args += ["--tmpfs", path]
        for source, target in hidden.shown:
            args += ["--ro-bind", source, target]
        for root in writable:
            args += ["--bind", root, root]
        for path in dict.fromkeys((*self.roots, cwd, *(_helper_paths() if helper else ()))):
            # Paths under /tmp or a hidden folder were covered: show them again, read-only.
            covered = contains(SANDBOX_TMP, path) or covered_by(hidden, path)
            if covered and not any(contains(w, path) for w in writable):
                args += ["--ro-bind", path, path]
        for path in hidden.private:
            args += ["--tmpfs", path]
        for path in hidden.masked:
            args += ["--ro-bind", "/dev/null", path]
        args += protection(writable, masks.protected, self.home).mounts()
        for path in (*masks.secret_files, *_existing(DOCKER_SOCKETS)):
            args += ["--ro-bind", "/dev/null", path]
        for path in masks.secret_dirs:
            args += ["--tmpfs", path, "--remount-ro", path]
        return args

    def _namespaces(self, network: bool) -> list[str]:
        """`--cap-drop ALL`: run by root, bwrap would otherwise leave the command every
        capability inside its user namespace (enough to ptrace the relay, or to
        unmount what hides a secret); unprivileged, it already has none."""
        args = ["--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"]
        args.append("--unshare-user" if self.features.unshare_user else "--unshare-user-try")
        args += ["--disable-userns"] if self.features.disable_userns else []
        return args + ([] if network else ["--unshare-net"])

    def _inner(
        self, argv: tuple[str, ...], writable: tuple[str, ...], network: bool, proxy: str | None
    ) -> list[str]:
        """The helper's argv: Landlock when stacked (TCP left to the namespace when the
        relay must reach the loopback), the socket filter, the relay."""
        config = {
            "writable": [*writable, SANDBOX_TMP, "/dev/null"] if self.landlock else None,
            "deny_network": not network and proxy is None,
            "seccomp": None if self.unix_sockets else _filter_text(),
            "relay": None
            if proxy is None
            else {"socket": relay.INSIDE_SOCKET, "port": relay.PROXY_PORT},
        }
        python, helper = _helper_files()
        return [python, "-I", "-S", helper, json.dumps(config), "--", *argv]


def _helper_files() -> tuple[str, str]:
    """The interpreter and the script that apply Landlock inside the sandbox."""
    return os.path.realpath(sys.executable), os.path.realpath(landlock_syscalls.__file__)


def _helper_paths() -> tuple[str, ...]:
    """What the helper needs to be visible: the interpreter with its standard library
    (its prefix), and the script."""
    python, helper = _helper_files()
    return python, os.path.realpath(sys.base_prefix), helper, os.path.realpath(relay.__file__)


def _filter_text() -> str:
    """The Unix-socket filter for this machine, as the helper's config carries it."""
    return base64.b64encode(unix_socket_filter()).decode()


def _existing(paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(os.path.realpath(p) for p in paths if os.path.exists(p)))
