"""What a command sandbox must hide or freeze in the workspace, found before each run.

The lists come from `loopd.policy.secrets` and `loopd.policy.paths`, so the file tools
and the OS sandbox agree on what a secret and a protected path are. The walk covers the
whole tree under every root and skips nothing: a limit on depth or on the number of
entries, or a folder left out because it is usually harmless (`node_modules`), is a
place to hide a secret from the masks, or a way to push the real one past the limit by
creating files. Symlinks are not followed (a secret-named symlink masks what it points
to). Only past `MAX_ENTRIES` does the scan give up, and then the command is refused
(`TreeTooLarge`), never run unmasked. A file created *during* a command is not masked
by it; the file tools' own deny-read check still applies to such files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from loopd.policy.paths import PROTECTED_DIRS, PROTECTED_FILES, outermost
from loopd.policy.secrets import HOME_SECRETS, SECRET_DIR_NAMES, contains, is_secret_name
from loopd.walk import walk

MAX_ENTRIES = 5_000_000


class TreeTooLarge(OSError):
    """The workspace has more entries than the scan checks: the command is refused."""


_PROTECTED_NAMES = frozenset(PROTECTED_DIRS + PROTECTED_FILES)


@dataclass(frozen=True, slots=True)
class Masks:
    """Canonical paths: `secret_files` read as empty, `secret_dirs` as empty folders;
    `protected` are the protected entries met in the writable roots (`.git` folders
    and files, `.vscode/`, `.envrc`...), for `loopd.sandbox.protect` to freeze."""

    secret_files: tuple[str, ...] = ()
    secret_dirs: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()


@dataclass(slots=True)
class _Found:
    secret_files: dict[str, None]
    secret_dirs: dict[str, None]
    protected: dict[str, None]


def scan(
    roots: Iterable[str],
    writable: Iterable[str],
    home: str,
    extra_secrets: Iterable[str] = (),
    *,
    limit: int = MAX_ENTRIES,
) -> Masks:
    """Secrets under the roots and the home directory; protected paths under the
    writable roots (only those need freezing: everything else is read-only already).
    `TreeTooLarge` past `limit` entries under one root."""
    found = _Found({}, {}, {})
    writable = tuple(writable)
    for path in (*(os.path.join(home, h) for h in HOME_SECRETS), *extra_secrets):
        _add_secret(found, path)
    for root in dict.fromkeys((*roots, *writable)):
        _walk(found, root, writable, limit)
    dirs = outermost(found.secret_dirs)  # a secret inside a masked folder is masked with it
    files = tuple(f for f in found.secret_files if not any(contains(d, f) for d in dirs))
    return Masks(files, dirs, tuple(found.protected))


def _add_secret(found: _Found, path: str) -> None:
    if not os.path.lexists(path):
        return
    real = os.path.realpath(path)
    if os.path.isdir(real):
        found.secret_dirs[real] = None
    elif os.path.exists(real):
        found.secret_files[real] = None


def _add_protected(found: _Found, path: str, writable: tuple[str, ...]) -> None:
    real = os.path.realpath(path)
    if os.path.exists(real) and any(contains(w, real) for w in writable):
        found.protected[real] = None


def _walk(found: _Found, root: str, writable: tuple[str, ...], limit: int) -> None:
    guarded = any(contains(w, root) for w in writable)
    seen = 0
    for folder in walk(root):  # iterative: a tree of any depth is scanned whole
        current, dirs, files = folder.path, folder.dirs, folder.files
        seen += len(dirs) + len(files)
        if seen > limit:
            raise TreeTooLarge(
                f"{root} holds more than {limit} files and folders: too many to check "
                "for secrets before running a command, so the command was not run"
            )
        for name in files:
            path = os.path.join(current, name)
            if is_secret_name(name):
                _add_secret(found, path)
            elif guarded and name in _PROTECTED_NAMES:
                _add_protected(found, path, writable)
        for name in list(dirs):
            path = os.path.join(current, name)
            if name.lower() in SECRET_DIR_NAMES:
                _add_secret(found, path)
            elif guarded and name in _PROTECTED_NAMES:
                _add_protected(found, path, writable)
            else:
                continue
            dirs.remove(name)
