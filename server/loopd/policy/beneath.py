"""Opening files so that the kernel, not a string check, keeps them under a root.

A path checked with `realpath` can change before it is opened: swap a directory for a
symlink to `/` and the check approved one file while the open reaches another. So the
file tools open through `open_beneath`, which resolves the path relative to a directory
descriptor of the root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: any
step that would leave the root (`..` past it, an absolute symlink, a symlink pointing
outside, `/proc` magic links) fails with EXDEV/ELOOP at the moment of use.

Where `openat2` is missing (kernels before 5.6, or a seccomp filter that hides it), the
fallback walks the path one component at a time with `O_NOFOLLOW`: it is stricter (it
refuses every symlink, even one that stays inside) but never looser. `..` is followed
only while it stays below the root.

Writes replace the file atomically: a temporary sibling is written and renamed over the
target inside the same (beneath-opened) directory, so a symlink planted at the target is
replaced, never followed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from collections.abc import Callable
from typing import Literal

DEFAULT_MAX_READ_BYTES = 256 * 1024
DEFAULT_MAX_WRITE_BYTES = 4 * 1024 * 1024

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (generic table)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08

Method = Literal["auto", "openat2", "walk"]


class PathEscapeError(PermissionError):
    """The path leaves its root (through `..`, an absolute path or a symlink)."""

    def __init__(self, path: str, detail: str = "leaves the permitted folder") -> None:
        super().__init__(errno.EXDEV, f"{path} {detail}")
        self.path = path


class FileTooLarge(OSError):
    """The file is over the size cap; read it in pages or raise the cap."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"{path} is {size} bytes, over the {limit}-byte limit")
        self.size = size
        self.limit = limit


class NotRegularFile(OSError):
    """The path is a FIFO, socket or device: reading it could block forever or never
    end, so the file tools refuse it."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{path} is a {kind}, not a regular file")
        self.kind = kind


def file_kind(mode: int) -> str:
    """What `mode` (from a stat) is, in words."""
    for test, kind in (
        (stat.S_ISREG, "regular file"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "named pipe (FIFO)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISLNK, "symlink"),
    ):
        if test(mode):
            return kind
    return "special file"


def check_regular(mode: int, path: str) -> None:
    """Raise unless `mode` is a regular file's: `IsADirectoryError` for a directory,
    `NotRegularFile` for anything else."""
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    raise NotRegularFile(path, file_kind(mode))


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


_libc = ctypes.CDLL(None, use_errno=True)
_openat2_state: list[bool] = []  # [] unknown, [True] works, [False] missing


def _openat2(dir_fd: int, rel: str, flags: int, mode: int, no_symlinks: bool = False) -> int:
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0)
    how.resolve = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS
    if no_symlinks:
        how.resolve |= _RESOLVE_NO_SYMLINKS
    size = ctypes.c_size_t(ctypes.sizeof(how))
    fd: int = _libc.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(rel), ctypes.byref(how), size)
    if fd < 0:
        err = ctypes.get_errno()
        if err == errno.EXDEV:
            raise PathEscapeError(rel)
        if err == errno.ELOOP and no_symlinks:
            raise PathEscapeError(rel, "goes through a symlink")
        raise OSError(err, os.strerror(err), rel)
    return fd


def openat2_available() -> bool:
    """Whether `openat2` works here (probed once)."""
    if not _openat2_state:
        root_fd = os.open("/", os.O_PATH | os.O_CLOEXEC)
        try:
            os.close(_openat2(root_fd, ".", os.O_PATH, 0))
            _openat2_state.append(True)
        except OSError:
            _openat2_state.append(False)
        finally:
            os.close(root_fd)
    return _openat2_state[0]


def _walk(dir_fd: int, rel: str, flags: int, mode: int) -> int:
    if rel.startswith("/"):
        raise PathEscapeError(rel)
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    stack = [os.dup(dir_fd)]
    try:
        for part in parts[:-1]:
            _step(stack, part, rel)
        last = parts[-1] if parts else "."
        if last == "..":
            _step(stack, last, rel)
            last = "."
        return _open_no_follow(stack[-1], last, flags, mode, rel)
    finally:
        for fd in stack:
            os.close(fd)


def _step(stack: list[int], part: str, rel: str) -> None:
    if part == "..":
        if len(stack) == 1:
            raise PathEscapeError(rel)
        os.close(stack.pop())
        return
    stack.append(_open_no_follow(stack[-1], part, os.O_PATH | os.O_DIRECTORY, 0, rel))


def _open_no_follow(dir_fd: int, name: str, flags: int, mode: int, rel: str) -> int:
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP) and stat.S_ISLNK(
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        ):
            raise PathEscapeError(rel, "goes through a symlink") from None
        raise


def open_in(dir_fd: int, name: str, flags: int) -> int:
    """A descriptor for `name`, one component, in the open directory `dir_fd`, through
    no link (`O_NOFOLLOW`): `PathEscapeError` when `name` is a symlink, `OSError`
    otherwise. For a walk that reached `dir_fd` beneath its root by descriptors."""
    return _open_no_follow(dir_fd, name, flags, 0, name)


def open_beneath(
    root: str,
    relpath: str,
    flags: int,
    mode: int = 0o644,
    *,
    method: Method = "auto",
    exact: bool = False,
) -> int:
    """A file descriptor for `relpath` resolved strictly under `root`. Raises
    `PathEscapeError` when the path would leave the root, `OSError` otherwise. The
    caller owns (and closes) the descriptor.

    `exact` refuses every symlink on the way (`RESOLVE_NO_SYMLINKS`), for a path that
    was already canonical when it was checked: what opens is then exactly the path
    that was decided on, not merely something under the same root. (The walk
    fallback always behaves this way.)"""
    use_openat2 = method == "openat2" or (method == "auto" and openat2_available())
    root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if use_openat2:
            return _openat2(root_fd, relpath, flags, mode, exact)
        return _walk(root_fd, relpath, flags, mode)
    finally:
        os.close(root_fd)


def relative_to(root: str, path: str) -> str:
    """`path` relative to `root`; an absolute path must lie lexically under it."""
    if not os.path.isabs(path):
        return path
    normal = os.path.normpath(path)
    if normal == root:
        return "."
    if not normal.startswith(root.rstrip("/") + "/"):
        raise PathEscapeError(path)
    return normal[len(root.rstrip("/")) + 1 :]


def read_bytes_beneath(
    root: str,
    path: str,
    *,
    max_bytes: int = DEFAULT_MAX_READ_BYTES,
    method: Method = "auto",
    exact: bool = False,
) -> bytes:
    """The content of a regular file under `root`, at most `max_bytes` (else
    `FileTooLarge`, which carries the size so the tool can page).

    Opened with `O_NONBLOCK` and checked with `fstat` before a byte is read: opening
    a FIFO for reading blocks until a writer appears (forever, in a thread no signal
    reaches), and a character device such as `/dev/zero` never ends. Anything but a
    regular file is `NotRegularFile`, at once."""
    rel = relative_to(root, path)
    return read_regular(
        lambda flags: open_beneath(root, rel, flags, method=method, exact=exact), path, max_bytes
    )


def read_regular(open_: Callable[[int], int], path: str, max_bytes: int) -> bytes:
    """Open with `open_(O_RDONLY | O_NONBLOCK)` (a descriptor), then read the file
    if it is a regular one of at most `max_bytes` (see `read_bytes_beneath`)."""
    try:
        fd = open_(os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # what opening a unix socket gives
            raise NotRegularFile(path, "socket or device") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        check_regular(info.st_mode, path)
        if info.st_size > max_bytes:
            raise FileTooLarge(path, info.st_size, max_bytes)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(path, len(data), max_bytes)
    return data


def read_text_beneath(
    root: str, path: str, *, max_bytes: int = DEFAULT_MAX_READ_BYTES, method: Method = "auto"
) -> str:
    """`read_bytes_beneath` decoded as UTF-8; undecodable bytes become U+FFFD."""
    return read_bytes_beneath(root, path, max_bytes=max_bytes, method=method).decode(
        "utf-8", errors="replace"
    )


def write_text_beneath(
    root: str,
    path: str,
    text: str,
    *,
    max_bytes: int = DEFAULT_MAX_WRITE_BYTES,
    make_parents: bool = True,
    method: Method = "auto",
    exact: bool = False,
) -> None:
    """Atomically replace (or create) a file under `root` with `text` as UTF-8. An
    existing file keeps its permission bits; missing parent folders are created under
    the root when `make_parents`."""
    data = text.encode("utf-8")
    if len(data) > max_bytes:
        raise FileTooLarge(path, len(data), max_bytes)
    dir_fd, name = open_parent_beneath(root, path, make_parents, method=method, exact=exact)
    try:
        replace_in(dir_fd, name, data)
    finally:
        os.close(dir_fd)


def open_parent_beneath(
    root: str, path: str, make_parents: bool, *, method: Method = "auto", exact: bool = False
) -> tuple[int, str]:
    """A descriptor of the directory `path` (under `root`) is in, opened beneath the
    root (its missing folders created when `make_parents`), and the file's name in it.
    The caller closes the descriptor."""
    parent, name = os.path.split(relative_to(root, path))
    if name in ("", ".", ".."):
        raise IsADirectoryError(errno.EISDIR, "not a file name", path)
    return _open_dir(root, parent, make_parents, method, exact), name


def _open_dir(root: str, rel: str, make_parents: bool, method: Method, exact: bool) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY
    try:
        return open_beneath(root, rel or ".", flags, method=method, exact=exact)
    except FileNotFoundError:
        if not make_parents:
            raise
    done = ""
    for part in (p for p in rel.split("/") if p):
        done = f"{done}/{part}" if done else part
        with contextlib.suppress(FileExistsError):
            fd = open_beneath(root, os.path.dirname(done) or ".", flags, method=method, exact=exact)
            try:
                os.mkdir(part, 0o777, dir_fd=fd)
            finally:
                os.close(fd)
    return open_beneath(root, rel, flags, method=method, exact=exact)


def replace_in(dir_fd: int, name: str, data: bytes) -> None:
    """Atomically replace (or create) `name` in the directory `dir_fd` with `data`:
    a temporary sibling renamed over it, so a symlink there is replaced, not followed."""
    mode = 0o644
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISLNK(info.st_mode):
        check_regular(info.st_mode, name)  # a FIFO or device is not replaced by a file
        mode = stat.S_IMODE(info.st_mode)
    temp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.loopd-tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), mode)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
