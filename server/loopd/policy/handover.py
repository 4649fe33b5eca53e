"""Handing a proven file to another process to write: `Handover`.

An editor asked to write a path (ACP `fs/write_text_file`) resolves it again, on its
own, following symlinks, and writes in place. loopd cannot make that resolution
beneath-only, so it proves the file around it instead (the caller watches the path
with a `PathWatch` from before `Handover.holds_still` until after the editor answers):

- `prepare` opens the parent beneath the root with no symlink allowed (creating
  missing folders, and the file itself empty, so the editor writes a file loopd has
  seen rather than creating one where a link may point) and keeps what the file held;
- `holds_still` proves, inside the watch, that the canonical path is still that file:
  the same inode, regular, with one link (a hard link would carry an in-place write
  to the other name, which may be outside the roots);
- `landed` checks, after the editor answered, that the file read beneath the root
  holds the content sent;
- `put_back` restores what the file held (or removes the file loopd created), beneath
  the root and atomically, when the write is refused.

Each step fails closed: a path that cannot be proven is `HandoverRefused`, and the
caller writes it itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass

from loopd.policy.beneath import (
    open_beneath,
    open_parent_beneath,
    read_bytes_beneath,
    replace_in,
)

MAX_KEPT_BYTES = 32 * 1024 * 1024  # a bigger file is written by loopd, not handed over


class HandoverRefused(Exception):
    """The path cannot be handed to another process; the message says why."""


@dataclass(frozen=True, slots=True)
class Handover:
    """A file under `root` proven for a write by another process: its inode and what
    it held (`before`; None when `prepare` created it)."""

    root: str
    path: str
    device: int
    inode: int
    before: bytes | None

    @classmethod
    def prepare(cls, root: str, path: str) -> Handover:
        try:
            dir_fd, name = open_parent_beneath(root, path, make_parents=True, exact=True)
        except OSError as err:
            raise HandoverRefused(f"its folder cannot be opened beneath the root: {err}") from err
        try:
            before = _kept(dir_fd, name)
            created = before is None
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            if created:
                flags |= os.O_CREAT | os.O_EXCL
            try:
                fd = os.open(name, flags, 0o644, dir_fd=dir_fd)
            except OSError as err:
                raise HandoverRefused(f"it changed while it was proven: {err}") from err
            try:
                info = os.fstat(fd)
            finally:
                os.close(fd)
        finally:
            os.close(dir_fd)
        _check_single(info)
        return cls(root, path, info.st_dev, info.st_ino, before)

    def holds_still(self) -> bool:
        """Whether the canonical path, opened beneath the root with no symlink, is
        still the proven file with one link."""
        try:
            fd = open_beneath(self.root, self._rel(), os.O_PATH, exact=True)
        except OSError:
            return False
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
        try:
            _check_single(info)
        except HandoverRefused:
            return False
        return (info.st_dev, info.st_ino) == (self.device, self.inode)

    def landed(self, text: str) -> bool:
        """Whether the file at the canonical path holds `text` (line endings aside:
        an editor keeps a file's own) and is still the proven file."""
        sent = text.encode("utf-8")
        try:
            data = read_bytes_beneath(
                self.root, self.path, max_bytes=len(sent) * 2 + 16, exact=True
            )
        except OSError:
            return False
        same = data == sent or data.replace(b"\r\n", b"\n") == sent.replace(b"\r\n", b"\n")
        return same and self.holds_still()

    def put_back(self) -> bool:
        """Restore what the file held before the handover. False when the path no
        longer opens beneath the root (a link is still swapped in)."""
        try:
            dir_fd, name = open_parent_beneath(self.root, self.path, False, exact=True)
        except OSError:
            return False
        try:
            if self.before is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=dir_fd)
            else:
                replace_in(dir_fd, name, self.before)
        except OSError:
            return False
        finally:
            os.close(dir_fd)
        return True

    def _rel(self) -> str:
        return os.path.relpath(self.path, self.root)


def _kept(dir_fd: int, name: str) -> bytes | None:
    """The bytes of `name` in `dir_fd` (no symlink followed, regular only), or None
    when it does not exist."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as err:
        reason = "it is a symlink" if err.errno == errno.ELOOP else str(err)
        raise HandoverRefused(reason) from err
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        _check_single(info)
        if info.st_size > MAX_KEPT_BYTES:
            raise HandoverRefused(f"it is over {MAX_KEPT_BYTES} bytes")
        return handle.read(MAX_KEPT_BYTES + 1)


def _check_single(info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise HandoverRefused("it is not a regular file")
    if info.st_nlink != 1:
        raise HandoverRefused("it has another hard link")
