"""Edits through the editor's `fs/write_text_file`, as Zed reviews them, against a
client that saves as Zed does (the path resolved again, symlinks followed, written in
place); and the racing swapper, from a command the session started and from a process
loopd knows nothing of."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from acp.schema import WriteTextFileResponse

from loopd.acp.client_io import AcpFiles
from loopd.sandbox.base import PreparedCommand
from loopd.testing.fakes import ScriptedProvider
from loopd.testing.harness import scripted_manager
from loopd.tools.access import PathRefused
from loopd.tools.env import SystemClock
from loopd.tools.processes import BackgroundProcesses
from tests.unit.acp.conftest import EDITOR, EditorClient, connected, gate
from tests.unit.acp.swapping import Swapper, exchange, plant_link, swapper_command


@dataclass
class ZedEditor(EditorClient):
    """Saves as Zed does: parents created, the path opened by the OS (following any
    symlink), truncated and written in place. `swap` names are exchanged before the
    save and back after it (`around`), or twice after it (`after`): the race won."""

    swap: tuple[bytes, bytes] | None = None
    moment: str = "around"

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kw: Any
    ) -> WriteTextFileResponse:
        self.calls.append("write")
        self.writes.append((path, content))
        await asyncio.to_thread(self._save, Path(path), content)
        return WriteTextFileResponse()

    def _save(self, path: Path, content: str) -> None:
        if self.swap and self.moment == "around":
            exchange(*self.swap)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w") as handle:
                handle.write(content)
        finally:
            if self.swap:
                exchange(*self.swap)
                if self.moment == "after":
                    exchange(*self.swap)


@dataclass
class Box:
    """A workspace with `d/config`, and a private folder outside it."""

    ws: Path
    private: Path

    @classmethod
    def make(cls, tmp_path: Path) -> Box:
        box = cls(tmp_path / "ws", tmp_path / "home" / ".aws")
        (box.ws / "d").mkdir(parents=True)
        box.private.mkdir(parents=True)
        (box.ws / "d" / "config").write_text("public\n")
        (box.private / "config").write_text("SECRET\n")
        return box

    @property
    def target(self) -> Path:
        return self.ws / "d" / "config"

    def private_state(self) -> dict[str, str]:
        return {p.name: p.read_text() for p in self.private.iterdir()}


@contextlib.asynccontextmanager
async def editor_files(tmp_path: Path, box: Box, client: EditorClient) -> AsyncIterator[AcpFiles]:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    async with connected(manager, client, EDITOR) as s:
        assert s.agent.link is not None
        yield s.agent.link.files("s1", [str(box.ws)], gate(box.ws, home=box.private.parent))


async def test_edits_go_through_the_editor_which_saves_them(tmp_path: Path) -> None:
    box = Box.make(tmp_path)
    client = ZedEditor()
    new = box.ws / "fresh" / "deep" / "new.py"
    async with editor_files(tmp_path, box, client) as files:
        await files.write_text(str(box.target), "edited\n")
        await files.write_text(str(new), "created\n")
    assert client.writes == [(str(box.target), "edited\n"), (str(new), "created\n")]
    assert box.target.read_text() == "edited\n"
    assert new.read_text() == "created\n"


async def test_an_editor_that_keeps_the_write_in_a_buffer_gets_it_on_disk_too(
    tmp_path: Path,
) -> None:
    box = Box.make(tmp_path)
    client = EditorClient()  # records the write, saves nothing
    async with editor_files(tmp_path, box, client) as files:
        await files.write_text(str(box.target), "edited\n")
    assert client.writes == [(str(box.target), "edited\n")]
    assert box.target.read_text() == "edited\n"


async def test_a_path_that_cannot_be_proven_is_written_by_loopd(tmp_path: Path) -> None:
    """A hard link to a file outside (an in-place write would reach it) and a FIFO
    are never handed over: loopd replaces the link's name atomically, and refuses
    the FIFO."""
    box = Box.make(tmp_path)
    linked = box.ws / "linked.txt"
    os.link(box.private / "config", linked)
    os.mkfifo(box.ws / "pipe")
    client = ZedEditor()
    async with editor_files(tmp_path, box, client) as files:
        await files.write_text(str(linked), "replaced\n")
        with pytest.raises(OSError, match="FIFO"):
            await files.write_text(str(box.ws / "pipe"), "x")
    assert client.calls == []
    assert linked.read_text() == "replaced\n"
    assert box.private_state() == {"config": "SECRET\n"}


async def test_the_editor_is_not_asked_while_a_command_the_session_started_runs(
    tmp_path: Path,
) -> None:
    box = Box.make(tmp_path)
    client = ZedEditor()
    processes = BackgroundProcesses(SystemClock(), 1.0)
    sleeper = PreparedCommand(("sleep", "30"), {}, str(tmp_path), contained=True)
    async with editor_files(tmp_path, box, client) as files:
        await processes.start(sleeper, "sleep 30", str(tmp_path))
        await files.write_text(str(box.target), "while it runs\n")
        assert client.calls == []
        await processes.aclose()
        await files.write_text(str(box.target), "after it stopped\n")
    assert client.calls == ["write"]
    assert box.target.read_text() == "after it stopped\n"


async def test_after_a_command_ran_uncontained_the_editor_is_never_asked(
    tmp_path: Path,
) -> None:
    """Outside bubblewrap's pid namespace, a command's `setsid swapper &` outlives it
    in a session of its own that no look finds: once one ran, loopd writes itself."""
    box = Box.make(tmp_path)
    client = ZedEditor()
    escapee = tmp_path / "escapee.pid"
    leaver = PreparedCommand(
        ("sh", "-c", f"setsid sleep 30 & echo $! > {escapee}"), {}, str(tmp_path)
    )
    processes = BackgroundProcesses(SystemClock(), 1.0)
    async with editor_files(tmp_path, box, client) as files:
        await processes.start(leaver, "setsid sleep 30 &", str(tmp_path))
        while not escapee.exists() or not escapee.read_text().strip():  # noqa: ASYNC110 (a file)
            await asyncio.sleep(0.01)
        await processes.aclose()  # its group is gone; the escapee is not in it
        try:
            await files.write_text(str(box.target), "after it left one behind\n")
        finally:
            os.kill(int(escapee.read_text()), signal.SIGKILL)
    assert client.calls == []
    assert box.target.read_text() == "after it left one behind\n"


@pytest.mark.parametrize("moment", ["around", "after"])
@pytest.mark.parametrize("swapped", ["folder", "file"])
async def test_a_swap_during_the_editors_write_is_put_back_and_refused(
    tmp_path: Path, swapped: str, moment: str
) -> None:
    """The race won against the watch: a name on the path is exchanged with a link
    to a decoy (inside the workspace, so the redirected write harms nothing) and
    back, around or after the editor's save. The write is refused and the file
    holds what it held."""
    box = Box.make(tmp_path)
    decoy = box.ws / "decoy"
    decoy.mkdir()
    (decoy / "config").write_text("decoy\n")
    real = box.ws / "d" if swapped == "folder" else box.target
    link = plant_link(real, decoy if swapped == "folder" else decoy / "config")
    client = ZedEditor(swap=(os.fsencode(real), os.fsencode(link)), moment=moment)
    async with editor_files(tmp_path, box, client) as files:
        with pytest.raises(PathRefused, match=r"changed while the editor wrote it.*put back"):
            await files.write_text(str(box.target), "edited\n")
    assert client.calls == ["write"]
    assert box.target.read_text() == "public\n"
    redirected = "edited\n" if moment == "around" else "decoy\n"
    assert (decoy / "config").read_text() == redirected


@dataclass
class Tally:
    """What writes under a swapper came to. A leak is a write reported done while
    the private folder changed; `caught` writes were refused for a change on the
    path after the editor was asked, `redirected` of them did change the folder."""

    leaks: int = 0
    refused: int = 0
    caught: int = 0
    redirected: int = 0


async def writes_under(files: AcpFiles, box: Box, rounds: int, tally: Tally) -> None:
    for i in range(rounds):
        before = box.private_state()
        try:
            await files.write_text(str(box.target), f"edit {i}\n")
        except OSError as refusal:
            tally.refused += 1
            caught = "changed while the editor wrote it" in str(refusal)
            tally.caught += caught
            tally.redirected += caught and box.private_state() != before
            continue
        tally.leaks += box.private_state() != before


def swap_pair(box: Box, swapped: str) -> tuple[Path, Path]:
    if swapped == "folder":
        return box.ws / "d", box.private
    return box.target, box.private / "config"


@pytest.mark.parametrize("swapped", ["folder", "file"])
async def test_a_racing_swapper_the_session_started_leaks_nothing(
    tmp_path: Path, swapped: str
) -> None:
    """The model's background command flips the path for the whole run: the editor
    is never handed it, nothing outside changes; once it is stopped, edits go
    through the editor again."""
    box = Box.make(tmp_path)
    client = ZedEditor()
    processes = BackgroundProcesses(SystemClock(), 1.0)
    real, target = swap_pair(box, swapped)
    async with editor_files(tmp_path, box, client) as files:
        swapper = await processes.start(swapper_command(real, target), "swap", str(tmp_path))
        tally = Tally()
        await writes_under(files, box, 300, tally)
        assert processes.running() == (swapper,)  # it flipped for the whole run
        await processes.aclose()
        if real.is_symlink():  # stopped while swapped
            exchange(os.fsencode(real), os.fsencode(real.with_name("swap-link")))
        await files.write_text(str(box.target), "after\n")
    print(f"session {swapped} swapper, 300 writes: {tally}")
    assert (tally.leaks, client.calls) == (0, ["write"]), tally
    assert box.private_state() == {"config": "SECRET\n"}
    assert box.target.read_text() == "after\n"


@pytest.mark.parametrize("swapped", ["folder", "file"])
async def test_a_racing_swapper_loopd_does_not_know_of_is_caught_every_time(
    tmp_path: Path, swapped: str
) -> None:
    """A thread flips the path: no registry knows it, so the editor is asked while
    it races. A write the swap redirected cannot be taken back, but it is never
    reported done: every one is refused (and the workspace file put back)."""
    box = Box.make(tmp_path)
    client = ZedEditor()
    real, target = swap_pair(box, swapped)
    asked, rounds, tally = 0, 0, Tally()
    async with editor_files(tmp_path, box, client) as files:
        swapper = Swapper(real, target)
        swapper.start()
        try:
            while asked < 40 and rounds < 4000:
                rounds += 1
                await writes_under(files, box, 1, tally)
                asked = client.calls.count("write")
        finally:
            swapper.halt.set()
            swapper.join()
    print(f"unknown {swapped} swapper, {rounds} writes, {asked} asked: {tally}")
    assert asked > 0, rounds  # the race was run (how often the editor is asked varies with load)
    assert tally.leaks == 0, tally
