"""Walking a root for a checkpoint: every file a tool or a command may change.

The walk lists directories by descriptors, each opened from its parent with
`O_NOFOLLOW` (the root beneath itself), so a directory swapped for a symlink
mid-walk ends that folder's walk; every file's content is read through loopd's one
reader (`FileReader.read_in`: from the folder's descriptor, through no link, regular
files only, without blocking, bounded, never a secret), and a file it refuses is
left out, named. A symlink is kept as a link (its target is its content), never
followed; FIFOs, sockets and devices are not files anyone restores and are passed
over.

Left out: what `.gitignore` ignores (and `.git/info/exclude` at the root), every
`.git`, loopd's own folders (`own`), and secrets by the file tools' own rule
(`loopd.policy.secrets.secret_reason`: secret names, secret folders, the home's
credential locations): a checkpoint never copies a key into the store, and a
restore never writes one. A file over `max_file_bytes` is listed with
no blob, and the scan says so.

A file whose (mode, size, mtime_ns, inode, ctime_ns, device) are those of the
previous manifest keeps its digest unread: on a large repository only what changed
is read. A replacement of the same size and mtime has another ctime (and mostly
another inode). A file changed within `RACY_NS` of the scan could change again
within the same clock tick, its stamp unchanged: it is kept with a stamp no file
has (`ctime_ns` -1), so the next scan reads it again (git's "racy clean" rule).
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from loopd.checkpoints.blobs import BlobStore, digest_of
from loopd.checkpoints.manifest import Entry, Manifest
from loopd.policy.beneath import open_beneath
from loopd.policy.secrets import HOME_SECRETS, SECRET_DIR_NAMES, contains, is_secret_name
from loopd.protocol.reading import FileReader, ReadRefused
from loopd.tools.gitignore import MAX_BYTES, Ignore, inherited, read_ignore_file

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
RACY_NS = 1_000_000_000  # a change this close to the scan is not trusted to show in its stamp


MAX_FILES = 200_000  # a root with more (a build tree not ignored) is not checkpointed
MAX_DEPTH = 64  # folders deeper than this are left out (and named)


class StoreFull(Exception):
    """Keeping the scan would take the store past its bound."""


class TooManyFiles(Exception):
    """The root holds more than `MAX_FILES` files to keep."""

    def __init__(self, root: str) -> None:
        super().__init__(f"{root} holds over {MAX_FILES} files (add what is built to .gitignore)")


@dataclass(slots=True)
class Scan:
    """One root's walk. `room` is how many more bytes the store may take (`put`
    raises `StoreFull` past it); `added` counts what this scan wrote."""

    root: str
    reader: FileReader  # beneath the root: how its files and ignore files are read
    blobs: BlobStore
    previous: Manifest
    home: str
    own: tuple[str, ...]
    max_file_bytes: int
    room: int
    clock: Callable[[], int] = time.time_ns  # wall time, ns: what a file's change is racy against
    added: int = 0
    left_out: list[str] = field(default_factory=list)
    manifest: dict[str, Entry] = field(default_factory=dict)
    _hidden: tuple[tuple[str, ...], ...] = ()
    _secret_names: dict[str, bool] = field(default_factory=dict)
    _racy_after: int = 0

    def run(self) -> dict[str, Entry]:
        self._hidden = _hidden_below(self.root, self.home, self.own)
        if () in self._hidden:
            return self.manifest  # the root itself is secret, or loopd's: nothing to keep
        self._racy_after = self.clock() - RACY_NS
        fd = open_beneath(self.root, ".", _DIR, exact=True)
        with contextlib.closing(_Fd(fd)):
            self._walk(fd, (), inherited(self.root, self.root, self.reader))
        return self.manifest

    def _walk(self, fd: int, rel: tuple[str, ...], ignore: Ignore) -> None:
        entries = _entries(fd)
        if any(entry.name == ".gitignore" for entry in entries):
            ignore_file = os.path.join(self.root, *rel, ".gitignore")
            ignore = ignore.extended(rel, read_ignore_file(self.reader, ignore_file))
        for entry in entries:
            path = (*rel, entry.name)
            info = _lstat(entry)
            if info is None or entry.name == ".git":
                continue
            is_dir = stat.S_ISDIR(info.st_mode)
            if ignore.ignored(path, is_dir) or self._private(path, is_dir):
                continue
            if is_dir and len(path) > MAX_DEPTH:
                self.left_out.append(f"{'/'.join(path)}/ (deeper than {MAX_DEPTH} folders)")
            elif is_dir:
                with _opened(lambda name=entry.name: os.open(name, _DIR, dir_fd=fd)) as sub:
                    if sub is not None:
                        self._walk(sub.fd, path, ignore)
            elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                self._keep(fd, "/".join(path), entry.name, info)

    def _private(self, path: tuple[str, ...], is_dir: bool) -> bool:
        """Secret or loopd's own, by the file tools' rule (`secret_reason`), decided
        by name here: the locations it names are placed once per scan."""
        name = path[-1].lower()
        if name in SECRET_DIR_NAMES or (not is_dir and self._secret_name(name)):
            return True
        if not self._hidden:
            return False
        lowered = tuple(p.lower() for p in path)
        return any(lowered[: len(h)] == h for h in self._hidden)

    def _secret_name(self, name: str) -> bool:
        """`is_secret_name`, once per name a scan meets (names repeat: `__init__.py`)."""
        known = self._secret_names.get(name)
        if known is None:
            known = self._secret_names[name] = is_secret_name(name)
        return known

    def _keep(self, fd: int, rel: str, name: str, info: os.stat_result) -> None:
        if len(self.manifest) >= MAX_FILES:
            raise TooManyFiles(self.root)
        before = self.previous.get(rel)
        stamp = _stamp_of(info)  # taken before the read: never newer than what is read
        if before is not None and before.kept and _stamp(before) == stamp:
            self.manifest[rel] = before
            return
        if max(info.st_mtime_ns, info.st_ctime_ns) >= self._racy_after:
            stamp = (*stamp[:4], -1, stamp[5])  # read again next time (see the module doc)
        digest = ""
        if info.st_size > self.max_file_bytes:
            self.left_out.append(f"{rel} ({info.st_size} bytes, over max_file_bytes)")
        elif isinstance(data := self._content(fd, rel, name, info), str):
            self.left_out.append(f"{rel} ({data})")
        else:
            digest = self._put(data)
        self.manifest[rel] = Entry(digest, *stamp)  # no digest: a restore leaves it be

    def _content(self, fd: int, rel: str, name: str, info: os.stat_result) -> bytes | str:
        """The file's bytes (through the reader, from the folder's descriptor: no link,
        regular, bounded, never a secret) or a symlink's target; else why not."""
        if stat.S_ISLNK(info.st_mode):
            try:
                return os.fsencode(os.readlink(name, dir_fd=fd))
            except OSError as err:
                return f"its link could not be read: {err.strerror}"
        path = os.path.join(self.root, rel)
        read = self.reader.read_in(fd, name, path, max_bytes=self.max_file_bytes)
        if isinstance(read, ReadRefused):
            return f"it changed while it was read: {read.reason}"
        return read.data

    def _put(self, data: bytes) -> str:
        digest = digest_of(data)
        if self.added + len(data) > self.room and not self.blobs.has(digest):
            raise StoreFull
        _, added = self.blobs.put(data, digest)
        self.added += added
        return digest


def seen_by(
    root: str, reader: FileReader, blobs: BlobStore, kept: Manifest
) -> Callable[[str], bool]:
    """Whether the scan that made `kept` would have kept `path`, had it been there:
    the `.gitignore` files `kept` holds (as they were then) ignore neither it nor a
    folder on its way. A restore removes only such paths: a file the checkpoint
    never saw (ignored then) is not the checkpoint's to remove."""
    folders: dict[tuple[str, ...], Ignore] = {}

    def rules(folder: tuple[str, ...]) -> Ignore:
        if folder not in folders:
            above = rules(folder[:-1]) if folder else inherited(root, root, reader)
            entry = kept.get("/".join((*folder, ".gitignore")))
            text = ""
            if entry is not None and entry.kept and not entry.is_link:
                text = blobs.get(entry.digest)[:MAX_BYTES].decode("utf-8", "replace")
            folders[folder] = above.extended(folder, text)
        return folders[folder]

    def seen(path: str) -> bool:
        parts = tuple(path.split("/"))
        on_the_way = any(
            rules(parts[: i - 1]).ignored(parts[:i], True) for i in range(1, len(parts))
        )
        return not on_the_way and not rules(parts[:-1]).ignored(parts, False)

    return seen


def _hidden_below(root: str, home: str, own: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The secret locations under the home directory and loopd's own folders that
    lie in `root` (or hold it: then `()`), as lowercased parts relative to it."""
    places = (*(os.path.join(home, h) for h in HOME_SECRETS), *own)
    found: list[tuple[str, ...]] = []
    top = root.lower()
    for place in (os.path.normpath(p).lower() for p in places):
        if contains(place, top):
            return ((),)
        if contains(top, place):
            found.append(tuple(place[len(top) :].strip("/").split("/")))
    return tuple(found)


def _stamp_of(info: os.stat_result) -> tuple[int, int, int, int, int, int]:
    return (
        info.st_mode,
        info.st_size,
        info.st_mtime_ns,
        info.st_ino,
        info.st_ctime_ns,
        info.st_dev,
    )


def _stamp(e: Entry) -> tuple[int, int, int, int, int, int]:
    return (e.mode, e.size, e.mtime_ns, e.ino, e.ctime_ns, e.dev)


def _entries(fd: int) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(fd) as listing:
            return list(listing)
    except OSError:
        return []


def _lstat(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return entry.stat(follow_symlinks=False)
    except OSError:
        return None


@dataclass(slots=True)
class _Fd:
    fd: int

    def close(self) -> None:
        os.close(self.fd)


@contextlib.contextmanager
def _opened(open_: Callable[..., int]) -> Iterator[_Fd | None]:
    """A directory descriptor, closed after; None when it cannot be opened (it went
    away, or became a symlink: its walk ends there)."""
    try:
        fd = _Fd(open_())
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        fd.close()
