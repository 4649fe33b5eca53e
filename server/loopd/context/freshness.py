"""Read bookmarks: what the agent last saw of each file it read or wrote.

After the seed's `FileLog`: `write` and `edit` consult it before changing a file
that exists. A file the agent never read, or one that changed since it last read it
(on disk, in the editor's unsaved buffer, by a command), is refused with a message
telling the model to read it first, because an edit computed from a stale picture
overwrites someone's work. Creating a new file needs no read.

The same bookmarks drive a reminder: a file the agent has read that then changed is
announced once with the next user message, so the model does not reason about text
that is no longer there. Pure: the caller reads the files (through the session's
file access, so the editor's buffers count) and hands the text in.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping

MAX_TRACKED = 256
"""Bookmarks kept, newest first; the oldest is forgotten, which only means that
file must be read again before it is edited."""
WATCHED = 64
"""How many of the newest bookmarks are checked for a reminder before each message:
each check is a read, and through an editor a round trip."""


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


class FileLog:
    def __init__(self, limit: int = MAX_TRACKED) -> None:
        self._limit = limit
        self._seen: OrderedDict[str, bytes] = OrderedDict()  # what the agent last saw
        self._told: dict[str, bytes | None] = {}  # what the last reminder described

    def saw(self, path: str, text: str) -> None:
        """The agent read `path` whole, or wrote it: it knows this text."""
        digest = _digest(text)
        self._seen[path] = digest
        self._seen.move_to_end(path)
        self._told[path] = digest
        while len(self._seen) > self._limit:
            old, _ = self._seen.popitem(last=False)
            self._told.pop(old, None)

    def refusal(self, path: str, current: str | None, shown: str) -> str | None:
        """Why changing `path`, whose text is now `current` (None: it does not exist),
        must wait for a read; None when it may go ahead."""
        if current is None:
            return None
        seen = self._seen.get(path)
        if seen is None:
            return f"{shown} exists and you have not read it yet: read it first, then change it."
        if seen != _digest(current):
            return (
                f"{shown} changed since you last read it (on disk or in the editor): read "
                "it again first, then make your change to what it holds now."
            )
        return None

    def tracked(self) -> tuple[str, ...]:
        """The files worth a reminder: the newest `WATCHED` the agent saw."""
        return tuple(self._seen)[-WATCHED:]

    def changes(self, current: Mapping[str, str | None]) -> list[str]:
        """A reminder for each tracked file that changed since the agent (or the
        last reminder) saw it, each change told once. `current` holds the files'
        text now, None for one that is gone; a file it leaves out (it could not be
        read just now) is not judged."""
        out: list[str] = []
        for path in self.tracked():
            if path not in current:
                continue
            text = current[path]
            digest = None if text is None else _digest(text)
            if digest == self._told.get(path):
                continue
            self._told[path] = digest
            if digest == self._seen.get(path):
                continue  # changed and changed back
            if text is None:
                out.append(f"{path} was deleted since you read it.")
            else:
                out.append(
                    f"{path} changed since you last read it (on disk or in the editor). "
                    "Read it again before relying on its content or editing it."
                )
        return out
