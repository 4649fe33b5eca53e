"""Which view of the files a session's tools see: the disk, or an editor's buffers.

An editor may hold a newer version of a file than the disk (an unsaved buffer), and
an edit to a file open in the editor should land in that buffer (so the editor's undo
works) rather than under it on disk. Tools are built once per session, before any
editor asks anything, so they get a `FileRoutes.files_for(session_id)` view: each
call goes to whatever the session is routed to at that moment. A protocol adapter
routes a session to its connection's buffers while it has the session open and
unroutes it when it lets go; an unrouted session reads and writes the disk.

`TextFiles` has the shape of `loopd.tools.env.FileAccess` (async `read_text` and
`write_text` of absolute paths), so either side accepts the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class TextFiles(Protocol):
    async def read_text(self, path: str) -> str: ...

    async def write_text(self, path: str, text: str) -> None: ...


@dataclass(slots=True)
class FileRoutes:
    """Session id -> the `TextFiles` its tools use now; `disk` when unrouted. The
    last connection to route a session wins; unrouting only undoes one's own route."""

    disk: TextFiles
    _routes: dict[str, TextFiles] = field(default_factory=dict)

    def files_for(self, session_id: str) -> TextFiles:
        return RoutedFiles(self, session_id)

    def route(self, session_id: str, files: TextFiles) -> None:
        self._routes[session_id] = files

    def unroute(self, session_id: str, files: TextFiles) -> None:
        if self._routes.get(session_id) is files:
            del self._routes[session_id]

    def current(self, session_id: str) -> TextFiles:
        return self._routes.get(session_id, self.disk)


@dataclass(frozen=True, slots=True)
class RoutedFiles:
    routes: FileRoutes
    session_id: str

    async def read_text(self, path: str) -> str:
        return await self.routes.current(self.session_id).read_text(path)

    async def write_text(self, path: str, text: str) -> None:
        await self.routes.current(self.session_id).write_text(path, text)
