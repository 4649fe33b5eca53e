"""The bearer token every request to `loopd serve` carries.

`loopd serve token` makes a new one (any old one stops working at once) and prints
it once, to be copied to the client. Only its SHA-256 is stored, in a file of this
user's alone (0600, in a 0700 folder of the data dir): a copy of the data dir, a
backup, or the server's own logs never hold the token itself. A request's token is
hashed and compared with `hmac.compare_digest`, in constant time.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping

from loopd.home import data_path
from loopd.protocol.errors import ConfigError

PREFIX = "loopd_"  # so a leaked token is recognisable (secret scanners, logs)


def remote_folder(env: Mapping[str, str]) -> str:
    """`<data dir>/remote`, made private (0700) if missing."""
    folder = os.path.join(data_path(env), "remote")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def rotate(env: Mapping[str, str]) -> str:
    """A new token, whose hash replaces the stored one (atomically, created 0600)."""
    token = PREFIX + secrets.token_urlsafe(32)
    path = _path(env)
    temporary = f"{path}.{os.getpid()}.new"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, _digest(token).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    return token


def stored(env: Mapping[str, str]) -> bytes:
    """The stored token's hash; `ConfigError` (saying how to make one) when none is,
    or when the file is not this user's alone."""
    path = _path(env)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        told = "no token yet: run `loopd serve token` and give it to the client"
        raise ConfigError(told) from None
    except OSError as err:
        raise ConfigError(f"cannot read the token's file {path}: {err}") from None
    with contextlib.closing(os.fdopen(fd, "rb")) as file:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise ConfigError(f"{path} is readable by others: run `loopd serve token` again")
        digest = file.read(200).strip()
    if len(digest) != 64:
        raise ConfigError(f"{path} holds no token: run `loopd serve token` again")
    return digest


def matches(presented: str | None, digest: bytes) -> bool:
    """Whether `presented` is the token whose hash is `digest` (constant time)."""
    if presented is None:
        return False
    return hmac.compare_digest(_digest(presented).encode(), digest)


def bearer(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer …` header, or None."""
    if header is None:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def _path(env: Mapping[str, str]) -> str:
    return os.path.join(remote_folder(env), "token.sha256")
