"""A seccomp filter that keeps commands away from Unix sockets, as classic BPF bytes.

With the network namespace cut off, TCP, UDP and abstract Unix sockets are out of
reach, but a *pathname* Unix socket is a file: any socket the command can see (a
database, the Docker daemon, an agent, a session bus) can be connected to even on a
read-only mount. Claude Code's sandbox answers this the same way: commands may not
create `AF_UNIX` sockets at all. `socketpair` stays allowed (a connected pair reaches
nothing outside the process tree; pipes in many runtimes are built on it).

The program, for the machine's own architecture:

- another architecture's system call convention (32-bit x86 on x86-64, where
  `socketcall` multiplexes sockets past any argument check) kills the process;
- x32 system calls fail with ENOSYS;
- `socket(AF_UNIX, ...)` fails with EPERM;
- `io_uring_setup`/`enter`/`register` fail with ENOSYS (io_uring can open sockets
  without the `socket` system call);
- everything else is allowed.

Generated here in pure Python so no libseccomp binding is needed. bubblewrap loads it
itself (`--seccomp FD`, from the private file `filter_file` writes once per process);
with Landlock stacked, the in-sandbox helper (`landlock_syscalls`) installs it with
`prctl` after `PR_SET_NO_NEW_PRIVS`, as does the Landlock tier's child set-up.
"""

from __future__ import annotations

import atexit
import errno
import os
import platform
import shutil
import struct
import tempfile

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000

_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data (little endian)
_X32_BIT = 0x40000000
_AF_UNIX = 1
_IO_URING = (425, 426, 427)  # setup, enter, register: the generic numbers on both

# machine -> (AUDIT_ARCH_*, socket's number)
ARCHES = {
    "x86_64": (0xC000003E, 41),
    "aarch64": (0xC00000B7, 198),
}


class UnsupportedArch(OSError):
    """No filter is known for this machine: commands cannot be confined (fail closed)."""


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def unix_socket_filter(machine: str | None = None) -> bytes:
    """The filter program (`struct sock_filter[]`) for `machine` (default: this
    one); `UnsupportedArch` when there is none."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        raise UnsupportedArch(f"no Unix-socket filter for the {machine} architecture")
    arch, socket_nr = ARCHES[machine]
    eperm, enosys = _RET_ERRNO | errno.EPERM, _RET_ERRNO | errno.ENOSYS
    body = [
        _op(_LD_W_ABS, _OFFSET_ARCH),
        _op(_JEQ_K, arch, 1, 0),  # 1
        _op(_RET_K, _RET_KILL_PROCESS),  # 2
        _op(_LD_W_ABS, _OFFSET_NR),  # 3
        _op(_JGE_K, _X32_BIT, 0, 1),  # 4
        _op(_RET_K, enosys),  # 5
        _op(_JEQ_K, socket_nr, 0, 3),  # 6: not socket -> 10
        _op(_LD_W_ABS, _OFFSET_ARG0),  # 7
        _op(_JEQ_K, _AF_UNIX, 0, 5),  # 8: not AF_UNIX -> allow (14)
        _op(_RET_K, eperm),  # 9
        _op(_JEQ_K, _IO_URING[0], 2, 0),  # 10 -> 13
        _op(_JEQ_K, _IO_URING[1], 1, 0),  # 11 -> 13
        _op(_JEQ_K, _IO_URING[2], 0, 1),  # 12 -> 13 else 14
        _op(_RET_K, enosys),  # 13
        _op(_RET_K, _RET_ALLOW),  # 14
    ]
    return b"".join(body)


_written: list[str] = []


def filter_file() -> str:
    """A file holding this machine's filter, in a private (0700) folder made once per
    process (removed when it exits), and made again if something removed it."""
    if _written and os.path.exists(_written[0]):
        return _written[0]
    directory = tempfile.mkdtemp(prefix="loopd-seccomp-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = os.path.join(directory, "unix-sockets.bpf")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o400)
    with os.fdopen(fd, "wb") as out:
        out.write(unix_socket_filter())
    _written[:] = [path]
    return path
