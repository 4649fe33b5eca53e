"""Walking a tree loopd does not control, iteratively.

`os.walk` and `os.fwalk` recurse once per level on Python 3.11, so a repository
1,100 folders deep raised `RecursionError` in glob, the pre-command scan and the
done criteria' snapshot. `walk` keeps its own stack: any depth costs memory for the
pending folders, never the interpreter's stack.

Top-down, like `os.walk`: each `Folder` is yielded before its subfolders, and
removing names from `Folder.dirs` prunes them. `dirs` also names symlinks to
folders (as `os.walk` does), but only real folders are entered. Each folder is
opened with `O_NOFOLLOW` and must be the very inode its parent listed, so a folder
swapped for a symlink while the walk runs is skipped, not followed. Unreadable
folders are skipped. Names are sorted, so a walk is reproducible.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NONBLOCK


@dataclass(frozen=True, slots=True)
class Folder:
    path: str
    rel: tuple[str, ...]  # components below the walk's root; () for the root
    dirs: list[str]
    files: list[str]


def walk(root: str) -> Iterator[Folder]:
    """Every folder under `root` (itself included), top-down."""
    pending: list[tuple[str, tuple[str, ...], tuple[int, int] | None]] = [(root, (), None)]
    while pending:
        path, rel, identity = pending.pop()
        try:
            fd = os.open(path, _DIR if identity is None else _DIR | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if identity is not None and (info.st_dev, info.st_ino) != identity:
                continue  # not the folder its parent listed: swapped meanwhile
            dirs, files, real = _list(fd)
            folder = Folder(path, rel, dirs, files)
            yield folder
            entered = [
                (os.path.join(path, d), (*rel, d), real[d]) for d in folder.dirs if d in real
            ]
            pending.extend(reversed(entered))
        finally:
            os.close(fd)


def _list(fd: int) -> tuple[list[str], list[str], dict[str, tuple[int, int]]]:
    """Folder names (symlinks to folders included), other names, and the identity
    of each real folder."""
    dirs: list[str] = []
    files: list[str] = []
    real: dict[str, tuple[int, int]] = {}
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    own = entry.stat(follow_symlinks=False)
                    is_dir = stat.S_ISDIR(own.st_mode) or entry.is_dir()
                except OSError:
                    is_dir, own = False, None
                (dirs if is_dir else files).append(entry.name)
                if own is not None and stat.S_ISDIR(own.st_mode):
                    real[entry.name] = (own.st_dev, own.st_ino)
    except OSError:
        pass
    dirs.sort()
    files.sort()
    return dirs, files, real
