"""Where a data dir's daemon listens, and the checks that make the socket the user's.

Standard library only: the forwarder imports this before anything else.

The socket lives in a private folder (`loopd.home.daemon_folder`: the rule sits
there because the rest of loopd keeps commands and file tools out of it). Its name is derived from
the data dir's real path, so a throwaway `LOOPD_HOME` (a test, a tool) gets its
own daemon and never joins one serving another store. The folder must be a real
folder owned by this user with no access for anyone else; the socket must be a
socket owned by this user and private too. Anything else is refused (`Unsafe`),
never "fixed": a folder an attacker could write is a place they could plant a
socket of their own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import stat
import struct
from collections.abc import Callable, Mapping
from typing import NamedTuple

from loopd.home import daemon_folder, data_path


class Unsafe(Exception):
    """The daemon's folder or socket is not this user's alone."""


class Place(NamedTuple):
    """A data dir's daemon: where it listens. Paths are strings (see `loopd.home`)."""

    data: str  # the data dir the daemon serves
    folder: str  # private: 0700, this user's
    name: str  # the socket's file name in `folder`

    @property
    def endpoint(self) -> str:
        """The socket."""
        return os.path.join(self.folder, self.name)

    @property
    def lock(self) -> str:
        """Held by the running daemon: one per data dir, however many start."""
        return os.path.join(self.folder, f"{self.name}.lock")

    @property
    def log(self) -> str:
        return os.path.join(self.data, "daemon.log")

    def prepare(self) -> None:
        """Make the folder (0700) if missing; raise `Unsafe` if it is not private."""
        os.makedirs(self.data, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.folder, 0o700)
        private_folder(self.folder)

    def connect(self, timeout: float = 5.0) -> socket.socket | None:
        """A connection to the daemon, or None when nobody listens. Raises `Unsafe`
        when the folder, the socket or the peer is not this user's."""
        if not os.path.lexists(self.folder):
            return None  # never prepared: no daemon ever listened here
        private_folder(self.folder)
        try:
            info = os.lstat(self.endpoint)
        except FileNotFoundError:
            return None
        _private(info, "socket", self.endpoint, kind=stat.S_ISSOCK)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(short_path(self.endpoint))
        except (ConnectionRefusedError, FileNotFoundError):
            sock.close()
            return None
        except BaseException:
            sock.close()
            raise
        try:
            require_own_peer(sock)
        except Unsafe:
            sock.close()
            raise
        return sock


def place_of(env: Mapping[str, str]) -> Place:
    data = data_path(env)
    key = hashlib.sha256(os.fsencode(os.path.realpath(data))).hexdigest()[:16]
    return Place(data, daemon_folder(env), f"loopd-{key}.sock")


def private_folder(folder: str) -> None:
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        raise Unsafe(f"{folder} does not exist") from None
    _private(info, "folder", folder, kind=stat.S_ISDIR)


def require_own_peer(sock: socket.socket) -> None:
    """Raise `Unsafe` unless the process at the other end runs as this user."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    if uid != os.geteuid():
        raise Unsafe(f"the peer runs as uid {uid}, not {os.geteuid()}")


def short_path(path: str) -> str:
    """`path` as a socket address: Unix socket paths are limited to 107 bytes, and
    a deep `LOOPD_HOME` exceeds it, so a long one goes through its folder's
    descriptor (`/proc/self/fd/N/name`, kept open for the life of the process)."""
    if len(os.fsencode(path)) < 100:
        return path
    folder, name = os.path.split(path)
    fd = _folder_fds.get(folder)
    if fd is None:
        fd = _folder_fds[folder] = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{name}"


_folder_fds: dict[str, int] = {}


def _private(info: os.stat_result, what: str, path: str, *, kind: Callable[[int], bool]) -> None:
    if not kind(info.st_mode):
        raise Unsafe(f"{path} is not a {what} (a link or another kind of file)")
    if info.st_uid != os.geteuid():
        raise Unsafe(f"the {what} {path} belongs to uid {info.st_uid}, not to this user")
    if info.st_mode & 0o077:
        raise Unsafe(f"the {what} {path} is open to others (mode {info.st_mode & 0o777:o})")
