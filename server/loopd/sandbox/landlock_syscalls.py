"""Landlock through ctypes: read everywhere, write only under given paths, and (ABI 4+)
no TCP connect or bind; and the installer of a seccomp filter program. Standard
library only, on purpose: this file is also the helper that runs *inside* bubblewrap to
stack Landlock and the Unix-socket filter (`loopd.sandbox.seccomp`) under it, started
as `python3 -I -S landlock_syscalls.py CONFIG -- ARGV...`, where loopd is not
importable.

Why inside bwrap and never before: bwrap must write `/proc/self/uid_map` and mount its
new root, and a Landlock-restricted process can do neither. So bwrap builds the mount
namespace first, then runs this helper as the command; it restricts itself and execs
the real argv, which inherits the domain.

`restrict` is meant for a child between fork and exec (`preexec_fn`) or for this
helper: it restricts the calling thread, and the restriction is irreversible.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_PDEATHSIG = 1
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2

_FS_WRITE_FILE = 1 << 1
# write_file, remove_dir, remove_file, make_char, make_dir, make_reg, make_sock,
# make_fifo, make_block, make_sym (ABI 1)
_FS_WRITE_V1 = sum(1 << i for i in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_char_p))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI, 0 when Landlock is missing or disabled."""
    version: int = _libc.syscall(
        _SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
    )
    return max(version, 0)


def _write_mask(abi: int) -> int:
    mask = _FS_WRITE_V1
    mask |= _FS_REFER if abi >= 2 else 0
    mask |= _FS_TRUNCATE if abi >= 3 else 0
    return mask | (_FS_IOCTL_DEV if abi >= 5 else 0)


def restrict(writable: Sequence[str], deny_network: bool) -> None:
    """Restrict the calling thread: writes only beneath `writable` (missing paths are
    skipped), TCP connect/bind denied when `deny_network` and the ABI has net rules.
    Raises OSError when Landlock is unavailable: callers fail closed."""
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    write = _write_mask(abi)
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if deny_network and abi >= 4 else 0
    attr = _RulesetAttr(handled_access_fs=write, handled_access_net=net)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 16
    ruleset = _check(
        _libc.syscall(
            _SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
        )
    )
    try:
        for path in writable:
            _allow_writes(ruleset, path, write, abi)
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        _check(_libc.syscall(_SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)))
    finally:
        os.close(ruleset)


def _allow_writes(ruleset: int, path: str, write: int, abi: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
        allowed = write if is_dir else _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
        rule = _PathBeneath(allowed_access=allowed, parent_fd=fd)
        _check(
            _libc.syscall(
                _SYS_ADD_RULE,
                ruleset,
                ctypes.c_int(_RULE_PATH_BENEATH),
                ctypes.byref(rule),
                ctypes.c_uint32(0),
            )
        )
    finally:
        os.close(fd)


def install_filter(program: bytes) -> None:
    """Confine the calling thread (and what it execs) with a classic BPF seccomp
    `program` (8-byte `sock_filter` entries). Irreversible; raises OSError on failure,
    so callers fail closed."""
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
    prog = _SockFprog(len(program) // 8, program)
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0))


def die_with_parent() -> None:
    """SIGKILL this process when the thread that spawned it exits."""
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0))


def _relay() -> dict[str, Any]:
    """`relay.py`, this file's sibling, loaded by path: loopd is not importable here,
    and `runpy` would cost the command more start-up than the file itself."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.py")
    namespace: dict[str, Any] = {"__name__": "loopd_relay"}
    with open(path, encoding="utf-8") as source:
        exec(compile(source.read(), path, "exec"), namespace)  # loopd's own file, read-only
    return namespace


def main(argv: Sequence[str]) -> NoReturn:
    """`CONFIG -- ARGV...`: CONFIG is JSON {"writable": [...] or null (no Landlock),
    "deny_network": bool, "seccomp": base64 filter program or null, "relay":
    {"socket": path, "port": n} or null}. The relay (`relay.py`, this file's
    sibling) starts first: it needs the Unix sockets the filter then takes away."""
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: landlock_syscalls.py CONFIG -- ARGV...\n")
        sys.exit(2)
    config = json.loads(argv[0])
    if config.get("relay"):
        _relay()["start"](config["relay"]["socket"], int(config["relay"]["port"]))
    if config.get("writable") is not None:
        restrict(config["writable"], bool(config["deny_network"]))
    if config.get("seccomp"):
        install_filter(base64.b64decode(config["seccomp"]))
    os.execvp(argv[2], list(argv[2:]))


if __name__ == "__main__":
    main(sys.argv[1:])
