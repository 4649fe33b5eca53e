"""The Landlock tier: no namespaces, just a kernel rule set the child applies to itself.

The child (between fork and exec, via `PreparedCommand.preexec`) restricts itself:
reads stay allowed everywhere, writes only under the writable roots, the shared temp
directory and `/dev/null`; TCP connect and bind are denied unless the network is
granted (Landlock ABI 4+; other protocols are not covered); Unix sockets cannot be
created (`loopd.sandbox.seccomp`) unless `unix_sockets` lists sockets to allow. It also
asks the kernel to SIGKILL it when its parent thread exits. loopd itself is never
restricted.

Weaker than bubblewrap, and honest about it: secrets are not masked (only the file
tools refuse them), and a background process is not killed when the command exits;
the shell tool's process-group kill is what ends it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from loopd.policy.network import NetworkGrant
from loopd.policy.tiers import Tier
from loopd.sandbox.base import CommandSpec, PreparedCommand, sanitized_env
from loopd.sandbox.landlock_syscalls import (
    abi_version,
    die_with_parent,
    install_filter,
    restrict,
)
from loopd.sandbox.seccomp import unix_socket_filter

__all__ = ["LandlockSandbox", "abi_version"]


def _temp_dirs() -> tuple[str, ...]:
    return tuple(dict.fromkeys(os.path.realpath(p) for p in ("/tmp", tempfile.gettempdir())))


@dataclass(frozen=True, slots=True)
class _Restrict:
    """The child-side set-up, as a picklable-free plain callable with no closures."""

    writable: tuple[str, ...]
    deny_network: bool
    socket_filter: bytes | None

    def __call__(self) -> None:
        die_with_parent()
        restrict(self.writable, self.deny_network)
        if self.socket_filter is not None:
            install_filter(self.socket_filter)


@dataclass(frozen=True, slots=True)
class LandlockSandbox:
    base_env: Mapping[str, str]
    roots: tuple[str, ...]
    network: NetworkGrant
    read_only: bool = False
    unix_sockets: tuple[str, ...] = ()

    @property
    def tier(self) -> str:
        return Tier.LANDLOCK

    def prepare(self, spec: CommandSpec) -> PreparedCommand:
        roots = () if self.read_only else self.roots + spec.writable_roots + _temp_dirs()
        writable = (*dict.fromkeys(roots), "/dev/null")
        network = spec.network or self.network.granted
        socket_filter = None if self.unix_sockets else unix_socket_filter()
        preexec = _Restrict(writable, not network, socket_filter)
        return PreparedCommand(spec.argv, sanitized_env(self.base_env), spec.cwd, preexec)
