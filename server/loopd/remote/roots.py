"""The folders a remote client may name: the server's workspace roots, nothing else.

A remote client names paths on the server: a session's `cwd` and
`additionalDirectories` (`session/new`, `load`, `resume`, `fork`) and the files its
prompts link (`file://` URIs). Each is canonicalised (symlinks resolved) before it
is judged, and must lie beneath one of the roots `loopd serve --root` was given. A
path that does not is refused before the daemon sees the message; what a session
then does within its roots is the daemon's policy, as for a local editor.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

_OPENING = frozenset({"session/load", "session/resume", "session/fork"})
_SESSION_METHODS = frozenset(
    {"session/new", "session/load", "session/resume", "session/fork", "session/list"}
)


def canonical_roots(paths: Sequence[str]) -> tuple[str, ...]:
    return tuple(os.path.realpath(p) for p in paths)


def outside(message: dict[str, Any], roots: Sequence[str]) -> str | None:
    """The first path `message` names outside `roots`, or None when all are within."""
    for path in named_paths(message):
        if not within(path, roots):
            return path
    return None


def within(path: str, roots: Sequence[str]) -> bool:
    if not os.path.isabs(path):
        return False
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)


def named_paths(message: dict[str, Any]) -> Iterator[str]:
    params = message.get("params")
    if not isinstance(params, dict):
        return
    method = message.get("method")
    if method in _SESSION_METHODS:
        cwd = params.get("cwd")
        if cwd is not None or method != "session/list":
            yield cwd if isinstance(cwd, str) else ""
        extra = params.get("additionalDirectories") or []
        yield from (d if isinstance(d, str) else "" for d in extra)
    elif method == "session/prompt":
        for block in params.get("prompt") or []:
            uri = _uri_of(block)
            if uri is not None:
                yield uri


def _uri_of(block: Any) -> str | None:
    """The path a prompt block's `file:` URI names (other schemes name no path here)."""
    if not isinstance(block, dict):
        return None
    uri = block.get("uri")
    if not isinstance(uri, str):
        resource = block.get("resource")
        uri = resource.get("uri") if isinstance(resource, dict) else None
    if not isinstance(uri, str):
        return None
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        return None
    return unquote(parts.path)


Folders = Callable[[str], tuple[str, ...] | None]  # a stored session's cwd and dirs


def stored_outside(message: dict[str, Any], roots: Sequence[str], folders: Folders) -> str | None:
    """The first folder of the stored session `message` opens that lies outside
    `roots` (None when all are within, or no such session is stored)."""
    params = message.get("params")
    session = params.get("sessionId") if isinstance(params, dict) else None
    if message.get("method") not in _OPENING or not isinstance(session, str):
        return None
    for path in folders(session) or ():
        if not within(path, roots):
            return path
    return None


def visible(message: dict[str, Any], roots: Sequence[str]) -> dict[str, Any]:
    """A `session/list` answer with only the sessions within `roots`."""
    result = message.get("result")
    if not isinstance(result, dict) or not isinstance(result.get("sessions"), list):
        return message
    kept = [s for s in result["sessions"] if isinstance(s, dict) and _all_within(s, roots)]
    return {**message, "result": {**result, "sessions": kept}}


def _all_within(info: dict[str, Any], roots: Sequence[str]) -> bool:
    cwd, extra = info.get("cwd"), info.get("additionalDirectories") or []
    paths = [cwd, *extra] if isinstance(extra, list) else [cwd, extra]
    return all(isinstance(p, str) and within(p, roots) for p in paths)
