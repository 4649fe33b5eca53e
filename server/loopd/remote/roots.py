"""The folders a remote client may name: the server's workspace roots, nothing else.

A remote client names paths on the server: a session's `cwd` and
`additionalDirectories` (`session/new`, `load`, `resume`, `fork`) and the files its
prompts link (`file://` URIs). Each is canonicalised (symlinks resolved) before it
is judged, and must lie beneath one of the roots `loopd serve --root` was given. A
path that does not is refused before the daemon sees the message; what a session
then does within its roots is the daemon's policy, as for a local editor.

An LSP client (`loopd lsp --remote`) names the same things under the `loopd/`
prefix (`loopd/session/new`, ...), and a few more: its workspace root
(`initialize`'s `rootUri`, `rootPath`, `workspaceFolders`: a session opened without
a cwd opens there), the folders of `loopd.newSession`, `loopd.trust` and
`loopd.untrust`, and the document of `loopd.ask` (one that is not open is read from
the server's disk). A stored session it deletes is judged as one it opens.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

_OPENING = frozenset({"session/load", "session/resume", "session/fork", "session/delete"})
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


def acp_method(method: Any) -> Any:
    """ACP's name of a `loopd/session/*` method of the LSP extension (its params are
    ACP's); any other method as it is."""
    if isinstance(method, str) and method.startswith("loopd/session/"):
        return method.removeprefix("loopd/")
    return method


def named_paths(message: dict[str, Any]) -> Iterator[str]:
    params = message.get("params")
    if not isinstance(params, dict):
        return
    method = acp_method(message.get("method"))
    if method == "initialize":
        yield from _workspace(params)
    elif method == "workspace/executeCommand":
        yield from _command_paths(params)
    elif method in _SESSION_METHODS:
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


def _workspace(params: dict[str, Any]) -> Iterator[str]:
    """An LSP client's workspace folders (ACP's `initialize` names none)."""
    root_uri, root_path = params.get("rootUri"), params.get("rootPath")
    if root_uri is not None:
        yield _file_path(root_uri) or ""
    elif root_path is not None:
        yield root_path if isinstance(root_path, str) else ""
    folders = params.get("workspaceFolders") or []
    for folder in folders if isinstance(folders, list) else [None]:
        uri = folder.get("uri") if isinstance(folder, dict) else None
        yield _file_path(uri) or ""


_COMMAND_KEYS = {"loopd.newSession": "cwd", "loopd.trust": "folder", "loopd.untrust": "folder"}


def _command_paths(params: dict[str, Any]) -> Iterator[str]:
    """What a `loopd.*` command names: a folder, or `loopd.ask`'s document."""
    command, arguments = params.get("command"), params.get("arguments") or []
    first = arguments[0] if isinstance(arguments, list) and arguments else None
    if command in _COMMAND_KEYS:
        value = first.get(_COMMAND_KEYS[command]) if isinstance(first, dict) else first
        if value is not None:
            yield value if isinstance(value, str) else ""
    elif command == "loopd.ask" and isinstance(first, dict) and first.get("uri") is not None:
        yield _file_path(first["uri"]) or ""


def _file_path(uri: Any) -> str | None:
    """The path of a `file:` URI; None for any other (the caller says what that means)."""
    if not isinstance(uri, str):
        return None
    parts = urlsplit(uri)
    return unquote(parts.path) if parts.scheme.lower() == "file" else None


def _uri_of(block: Any) -> str | None:
    """The path a prompt block's `file:` URI names (other schemes name no path here)."""
    if not isinstance(block, dict):
        return None
    uri = block.get("uri")
    if not isinstance(uri, str):
        resource = block.get("resource")
        uri = resource.get("uri") if isinstance(resource, dict) else None
    return _file_path(uri)


Folders = Callable[[str], tuple[str, ...] | None]  # a stored session's cwd and dirs


def stored_outside(message: dict[str, Any], roots: Sequence[str], folders: Folders) -> str | None:
    """The first folder of the stored session `message` opens that lies outside
    `roots` (None when all are within, or no such session is stored)."""
    params = message.get("params")
    session = params.get("sessionId") if isinstance(params, dict) else None
    if acp_method(message.get("method")) not in _OPENING or not isinstance(session, str):
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
