"""Routing a session's file access to the editor connection holding its buffers."""

from __future__ import annotations

from dataclasses import dataclass, field

from loopd.sessions.files import FileRoutes


@dataclass
class MemoryFiles:
    files: dict[str, str] = field(default_factory=dict)

    async def read_text(self, path: str) -> str:
        return self.files[path]

    async def write_text(self, path: str, text: str) -> None:
        self.files[path] = text


async def test_a_routed_session_uses_the_editor_and_falls_back_to_disk() -> None:
    disk, editor, other = MemoryFiles({"/a": "disk"}), MemoryFiles({"/a": "buffer"}), MemoryFiles()
    routes = FileRoutes(disk)
    view = routes.files_for("s1")  # built before anyone routes (as tools are)
    assert await view.read_text("/a") == "disk"
    routes.route("s1", editor)
    assert await view.read_text("/a") == "buffer"
    await view.write_text("/b", "new")
    assert editor.files["/b"] == "new" and "/b" not in disk.files
    routes.unroute("s1", other)  # not its route: nothing changes
    assert await view.read_text("/a") == "buffer"
    routes.unroute("s1", editor)
    assert await view.read_text("/a") == "disk"
    assert await routes.files_for("s2").read_text("/a") == "disk"
