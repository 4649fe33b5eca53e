"""Putting a root back as a manifest says, path by path, beneath the root.

Every directory is opened from the root with `open_beneath(..., exact=True)`: no
symlink is followed on the way, so a link planted after the checkpoint (say `src`
-> `/etc`) is never written through; the write then fails and is reported. Files
are replaced atomically (a temporary sibling renamed over the name, in the opened
directory), with the kept permission bits; a kept symlink is put back as a link.
Paths the target has not, and the current state has, are removed first (deepest
first; a link is unlinked, not followed), then directories they leave empty, then
the target's files are written, shallowest first. Paths left out of either manifest
(too large, ignored, secret) are never touched.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from loopd.checkpoints.blobs import BlobStore
from loopd.checkpoints.manifest import Entry, Manifest
from loopd.policy.beneath import open_beneath

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(slots=True)
class Applied:
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


def plan(
    target: Manifest, current: Manifest, seen: Callable[[str], bool]
) -> tuple[list[str], list[str]]:
    """(paths to write, paths to remove) to turn `current` into `target`. Only paths
    the target's scan would have `seen` are removed (see `scan.seen_by`)."""
    write = [
        p for p, e in target.items()
        if e.kept and not e.same_content(current.get(p)) and _keepable(current.get(p))
    ]  # fmt: skip
    remove = [p for p, e in current.items() if p not in target and e.kept and seen(p)]
    return sorted(write, key=_depth), sorted(remove, key=_depth, reverse=True)


def _keepable(now: Entry | None) -> bool:
    return now is None or now.kept  # a file too large to keep now is left as it is


def apply(
    root: str, blobs: BlobStore, target: Manifest, current: Manifest, seen: Callable[[str], bool]
) -> Applied:
    write, remove = plan(target, current, seen)
    done = Applied()
    keep_dirs = {d for p in target for d in _parents(p)}
    for path in remove:
        if _attempt(done.failed, path, functools.partial(_remove, root, path)):
            done.removed.append(path)
    for folder in sorted({d for p in remove for d in _parents(p)} - keep_dirs, key=_depth)[::-1]:
        with contextlib.suppress(OSError):  # not empty (ignored files): it stays
            _in_dir(root, os.path.dirname(folder), lambda fd, n: os.rmdir(n, dir_fd=fd), folder)
    for path in write:
        if _attempt(done.failed, path, functools.partial(_write, root, blobs, path, target[path])):
            done.written.append(path)
    return done


def _attempt(failed: list[tuple[str, str]], path: str, step: Callable[[], None]) -> bool:
    try:
        step()
    except (OSError, ValueError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        failed.append((path, why))
        return False
    return True


def _remove(root: str, path: str) -> None:
    def unlink(fd: int, name: str) -> None:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "a folder is there now")
        os.unlink(name, dir_fd=fd)

    with contextlib.suppress(FileNotFoundError):
        _in_dir(root, os.path.dirname(path), unlink, path)


def _write(root: str, blobs: BlobStore, path: str, entry: Entry) -> None:
    data = blobs.get(entry.digest)
    _make_parents(root, os.path.dirname(path))
    _in_dir(root, os.path.dirname(path), lambda fd, name: _replace(fd, name, data, entry), path)


def _replace(fd: int, name: str, data: bytes, entry: Entry) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise IsADirectoryError(errno.EISDIR, "a folder is there now")
    temp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.loopd-tmp"
    try:
        if entry.is_link:
            os.symlink(os.fsdecode(data), temp, dir_fd=fd)
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            with os.fdopen(os.open(temp, flags, 0o600, dir_fd=fd), "wb") as out:
                out.write(data)
                os.fchmod(out.fileno(), stat.S_IMODE(entry.mode))
        os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=fd)
        raise


def _make_parents(root: str, folder: str) -> None:
    done = ""
    for part in (p for p in folder.split("/") if p):
        parent, done = done, f"{done}/{part}" if done else part
        with contextlib.suppress(FileExistsError):
            _in_dir(root, parent, lambda fd, n: os.mkdir(n, 0o777, dir_fd=fd), done)


def _in_dir(root: str, folder: str, step: Callable[[int, str], None], path: str) -> None:
    """Run `step(dir_fd, name)` on `path`'s last part in `folder`, opened beneath
    `root` through no symlink at all."""
    fd = open_beneath(root, folder or ".", _DIR, exact=True)
    try:
        step(fd, os.path.basename(path))
    finally:
        os.close(fd)


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _depth(path: str) -> int:
    return path.count("/")
