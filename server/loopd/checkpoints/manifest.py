"""A root's manifest: each kept path (relative to the root) with its blob and stat.

Kept as one small JSON blob per directory plus one that maps each directory to its
blob, so a checkpoint after a turn that changed one file writes two small blobs,
and two manifests are compared folder by folder (`changed_paths`) without reading
the folders that did not change. The stat fields (size, mtime, inode, ctime) let the
next scan reuse a file's digest without reading it (the device too, since rows have 8
fields; a row of 7 was kept before).

An entry whose digest is "" was left out (too large to keep): a restore leaves that
path as it finds it.
"""

from __future__ import annotations

import functools
import json
import posixpath
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from loopd.checkpoints.blobs import BlobStore


@dataclass(frozen=True, slots=True)
class Entry:
    digest: str  # "" when the file was left out
    mode: int  # st_mode: the kind (regular file or symlink) and permission bits
    size: int
    mtime_ns: int
    ino: int
    ctime_ns: int
    dev: int = 0  # st_dev (0 in a manifest kept before it was: its files are read again)

    @property
    def kept(self) -> bool:
        return bool(self.digest)

    @property
    def is_link(self) -> bool:
        return stat.S_ISLNK(self.mode)

    def same_content(self, other: Entry | None) -> bool:
        return other is not None and (self.digest, self.mode) == (other.digest, other.mode)


Manifest = Mapping[str, Entry]


Folders = dict[str, tuple[tuple[tuple[str, Entry], ...], str]]
"""Folder -> its entries and the blob that keeps them, from an earlier `save`."""


def save(blobs: BlobStore, manifest: Manifest, known: Folders | None = None) -> tuple[str, int]:
    """Keep `manifest`; the digest of its top blob and the bytes added. A folder
    whose entries are those `known` has (and whose blob is still kept) is not
    encoded again; `known` is brought up to date."""
    folders: dict[str, list[tuple[str, Entry]]] = {}
    for path in sorted(manifest):
        folder, name = posixpath.split(path)
        folders.setdefault(folder, []).append((name, manifest[path]))
    top: dict[str, str] = {}
    added = 0
    for folder, listed in folders.items():
        entries = tuple(listed)
        was = known.get(folder) if known is not None else None
        if was is not None and was[0] == entries and blobs.has(was[1]):
            top[folder] = was[1]
            continue
        top[folder], n = blobs.put(_json([_row(name, e) for name, e in entries]))
        added += n
        if known is not None:
            known[folder] = (entries, top[folder])
    digest, n = blobs.put(_json(top))
    return digest, added + n


def _row(name: str, e: Entry) -> list[object]:
    return [name, e.digest, e.mode, e.size, e.mtime_ns, e.ino, e.ctime_ns, e.dev]


def load(blobs: BlobStore, digest: str) -> dict[str, Entry]:
    """The manifest kept as `digest`; `ValueError` or `OSError` when it cannot be read."""
    manifest: dict[str, Entry] = {}
    for folder, folder_digest in _top(blobs, digest).items():
        manifest.update(_folder(blobs, folder, folder_digest))
    return manifest


def referenced(blobs: BlobStore, digest: str) -> set[str]:
    """Every blob the manifest kept as `digest` names: its folders and its files."""
    found: set[str] = set()
    for folder, folder_digest in _top(blobs, digest).items():
        found.add(folder_digest)
        found |= {e.digest for e in _folder(blobs, folder, folder_digest).values() if e.kept}
    return found


def changed_paths(blobs: BlobStore, old: str, new: str) -> set[str]:
    """Paths whose content or kind differ between two kept manifests (added and
    removed ones included); folders with one blob in both are not read."""
    if old == new:
        return set()
    a, b = _top(blobs, old), _top(blobs, new)
    changed: set[str] = set()
    for folder in a.keys() | b.keys():
        if a.get(folder) == b.get(folder):
            continue
        left = _folder(blobs, folder, a[folder]) if folder in a else {}
        right = _folder(blobs, folder, b[folder]) if folder in b else {}
        changed |= differing(left, right)
    return changed


def differing(a: Manifest, b: Manifest) -> set[str]:
    return {p for p in a.keys() | b.keys() if not _same(a.get(p), b.get(p))}


def _same(x: Entry | None, y: Entry | None) -> bool:
    return (x is None and y is None) or (x is not None and x.same_content(y))


def _top(blobs: BlobStore, digest: str) -> dict[str, str]:
    top = json.loads(blobs.get(digest))
    if not isinstance(top, dict):
        raise ValueError(f"manifest {digest[:12]} is not a folder table")
    return {str(k): str(v) for k, v in top.items()}


@functools.lru_cache(maxsize=4096)  # blobs never change: a digest decodes once
def _folder(blobs: BlobStore, folder: str, digest: str) -> dict[str, Entry]:
    rows = json.loads(blobs.get(digest))
    found: dict[str, Entry] = {}
    for name, blob, *stamp in _rows(rows):
        path = posixpath.join(folder, str(name)) if folder else str(name)
        found[checked_path(path)] = Entry(str(blob), *(int(str(f)) for f in stamp))
    return found


def _rows(rows: object) -> Iterable[list[object]]:
    if not isinstance(rows, list) or not all(
        isinstance(r, list) and len(r) in (7, 8) for r in rows
    ):
        raise ValueError("a manifest folder is damaged")
    return rows


def checked_path(path: str) -> str:
    """`path` when it is a plain relative path (no `..`, no empty or absolute part):
    what a restore may write under a root, whatever the kept manifest says."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"a manifest names an unsafe path: {path!r}")
    return path


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
