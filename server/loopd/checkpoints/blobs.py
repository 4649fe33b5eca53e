"""Content-addressed blobs under the data dir: `<dir>/ab/cdef...` by the sha256 of
what is kept, zlib-compressed, written once (a temporary file renamed into place, so
a crash leaves no half blob) and never rewritten: two checkpoints, or two sessions
of one workspace, that hold the same file hold one blob.

The folder is loopd's own (under `$LOOPD_HOME`): commands never see it and the file
tools never read it, so what is kept here cannot be planted by the agent.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import zlib
from dataclasses import dataclass

_DIGEST = re.compile("[0-9a-f]{64}")


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class BlobStore:
    folder: str

    def path(self, digest: str) -> str:
        if _DIGEST.fullmatch(digest) is None:
            raise ValueError(f"not a blob digest: {digest!r}")
        return os.path.join(self.folder, digest[:2], digest[2:])

    def has(self, digest: str) -> bool:
        return os.path.exists(self.path(digest))

    def put(self, data: bytes, digest: str | None = None) -> tuple[str, int]:
        """Keep `data`; its digest and the bytes this added to the folder (0 when
        the blob was already kept)."""
        digest = digest or digest_of(data)
        target = self.path(digest)
        if os.path.exists(target):
            return digest, 0
        packed = zlib.compress(data, 1)
        temp = f"{target}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        try:
            fd = os.open(temp, flags, 0o600)
        except FileNotFoundError:  # the first blob of its two-letter folder
            os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
            fd = os.open(temp, flags, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(packed)
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise
        return digest, len(packed)

    def get(self, digest: str) -> bytes:
        """The blob's content; `OSError` when it is missing, `ValueError` when what is
        kept does not hash to its name (damaged: never restored)."""
        with open(self.path(digest), "rb") as kept:
            packed = kept.read()
        try:
            data = zlib.decompress(packed)
        except zlib.error:
            data = b""
        if digest_of(data) != digest:
            raise ValueError(f"blob {digest[:12]} is damaged")
        return data
