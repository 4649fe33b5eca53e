"""The network-namespace tier: `unshare` gives the command its own network (only a
loopback that nothing listens on) and its own pid namespace, so its background
processes die with it. Files are not confined: the file tools' path policy is the only
filesystem boundary here, and the policy never auto-allows commands in this tier.

As root `unshare --net --pid --fork --kill-child` is enough; an unprivileged user adds
a user namespace that maps their own uid (`--map-current-user`), so `id -u` stays the
same inside. `unshare` is killed when the thread that spawned it exits, and takes the
command with it (`--kill-child`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from loopd.policy.network import NetworkGrant
from loopd.policy.tiers import Tier
from loopd.sandbox.base import CommandSpec, PreparedCommand, outside_roots, sanitized_env
from loopd.sandbox.landlock_syscalls import die_with_parent


def unshare_argv(network: bool, unshare: str = "unshare") -> list[str]:
    """The wrapper in front of a command; without the network flag when granted."""
    args = [unshare]
    if os.geteuid() != 0:
        args += ["--user", "--map-current-user"]
    args += [] if network else ["--net"]
    return [*args, "--pid", "--fork", "--kill-child", "--"]


@dataclass(frozen=True, slots=True)
class NetnsSandbox:
    base_env: Mapping[str, str]
    network: NetworkGrant
    unshare: str = "unshare"

    @property
    def tier(self) -> str:
        return Tier.NETNS

    def prepare(self, spec: CommandSpec) -> PreparedCommand:
        """`unshare` and the command itself are found outside the roots (files are
        not confined here, so a repository's `bash` would run as the machine's)."""
        network = spec.network or self.network.granted
        env = sanitized_env(self.base_env)
        unshare = unshare_argv(network, outside_roots(self.unshare, spec, env))
        argv = (*unshare, outside_roots(spec.argv[0], spec, env), *spec.argv[1:])
        return PreparedCommand(argv, env, spec.cwd, die_with_parent)
