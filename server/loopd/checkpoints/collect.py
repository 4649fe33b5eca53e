"""Freeing the blob folder: the blobs no checkpoint refers to any more (their
sessions were deleted) are removed, and the store's count of bytes is set to what
the folder then holds. Run when the store is full, before a checkpoint is skipped.

A blob written in the last `GRACE` seconds is kept whatever refers to it: another
loopd process may be between writing a checkpoint's blobs and its row.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

from loopd.checkpoints import manifest
from loopd.checkpoints.blobs import BlobStore
from loopd.checkpoints.book import CheckpointBook

GRACE = 600.0


def collect(book: CheckpointBook, blobs: BlobStore, also: set[str] | None = None) -> int:
    """Remove unreferenced blobs (`also`: digests to keep besides the book's); the
    bytes the folder holds after."""
    live = set(also or ())
    for digest in book.references():
        live |= _reached(blobs, digest)
    held = 0
    old = time.time() - GRACE
    for path, digest in _blob_files(blobs.folder):
        with contextlib.suppress(OSError):
            info = os.stat(path)
            if digest in live or info.st_mtime > old:
                held += info.st_size
            else:
                os.unlink(path)
    book.set_used(held)
    return held


def _reached(blobs: BlobStore, digest: str) -> set[str]:
    """`digest` and the blobs it names: a manifest's folders and files, or a
    conversation's messages (whichever it is)."""
    try:
        top = json.loads(blobs.get(digest))
    except (OSError, ValueError):
        return {digest}
    if isinstance(top, dict) and isinstance(top.get("messages"), list):
        return {digest, *(str(m) for m in top["messages"])}
    try:
        return {digest, *manifest.referenced(blobs, digest)}
    except (OSError, ValueError):
        return {digest}


def _blob_files(folder: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    with contextlib.suppress(OSError):
        for prefix in os.listdir(folder):
            sub = os.path.join(folder, prefix)
            with contextlib.suppress(OSError):
                found += [(os.path.join(sub, n), prefix + n) for n in os.listdir(sub)]
    return found
