"""The Unix-socket filter, installed for real in a forked child: what it refuses and
what it leaves alone."""

from __future__ import annotations

import ctypes
import errno
import os
import socket

import pytest

from loopd.sandbox.landlock_syscalls import install_filter
from loopd.sandbox.seccomp import ARCHES, UnsupportedArch, filter_file, unix_socket_filter


def in_filtered_child(probe: str) -> int:
    """Run `probe` (a name below) in a child under the filter; its exit code is the
    errno it met (0: it worked)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        code = 0
        try:
            install_filter(unix_socket_filter())
            match probe:
                case "unix":
                    socket.socket(socket.AF_UNIX).close()
                case "unix_dgram":
                    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).close()
                case "socketpair":
                    for s in socket.socketpair():
                        s.close()
                case "inet":
                    socket.socket(socket.AF_INET).close()
                case "io_uring":
                    libc = ctypes.CDLL(None, use_errno=True)
                    params = ctypes.create_string_buffer(120)
                    if libc.syscall(425, 4, params) < 0:
                        code = ctypes.get_errno()
        except OSError as exc:
            code = exc.errno or 255
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(os.uname().machine not in ARCHES, reason="no filter for this machine")
@pytest.mark.parametrize(
    ("probe", "expected"),
    [
        ("unix", errno.EPERM),
        ("unix_dgram", errno.EPERM),
        ("io_uring", errno.ENOSYS),
        ("socketpair", 0),
        ("inet", 0),
    ],
)
def test_the_filter_refuses_unix_sockets_and_io_uring_only(probe: str, expected: int) -> None:
    assert in_filtered_child(probe) == expected


def test_an_unknown_architecture_has_no_filter() -> None:
    with pytest.raises(UnsupportedArch, match="riscv64"):
        unix_socket_filter("riscv64")


def test_each_known_architecture_checks_its_own_audit_arch() -> None:
    for machine, (arch, _) in ARCHES.items():
        program = unix_socket_filter(machine)
        assert len(program) % 8 == 0
        assert arch.to_bytes(4, "little") in program


def test_the_filter_file_is_private_and_made_again_when_removed() -> None:
    path = filter_file()
    assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
    with open(path, "rb") as written:
        assert written.read() == unix_socket_filter()
    os.unlink(path)
    again = filter_file()
    assert os.path.exists(again)
