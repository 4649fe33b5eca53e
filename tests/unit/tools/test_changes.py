"""Undo of the last turn's file changes, over real files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from loopd.tools.access import LocalFiles, Reviewed
from loopd.tools.changes import ChangeLog


async def test_undo_restores_edits_and_removes_created_files(tmp_path: Path) -> None:
    edited, created = tmp_path / "a.py", tmp_path / "new.py"
    edited.write_text("v1\n")
    log = ChangeLog()
    log.begin_turn()
    edited.write_text("v2\n")
    log.record(str(edited), "v1\n", "v2\n")
    edited.write_text("v3\n")
    log.record(str(edited), "v2\n", "v3\n")
    created.write_text("hello\n")
    log.record(str(created), None, "hello\n")

    report = await log.undo(LocalFiles())
    assert set(report.restored) == {str(edited), str(created)}
    assert edited.read_text() == "v1\n"  # back to before the turn's FIRST change
    assert not created.exists()
    assert (await log.undo(LocalFiles())).summary.startswith("Nothing to undo")


async def test_a_file_changed_since_is_left_alone_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    log = ChangeLog()
    log.begin_turn()
    path.write_text("agent\n")
    log.record(str(path), "person\n", "agent\n")
    path.write_text("person again\n")

    report = await log.undo(LocalFiles())
    assert report.restored == ()
    assert report.refused == ((str(path), "it changed after that turn"),)
    assert path.read_text() == "person again\n"


async def test_undo_takes_the_newest_turn_that_changed_something(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    log = ChangeLog()
    log.begin_turn()
    path.write_text("one\n")
    log.record(str(path), "zero\n", "one\n")
    log.begin_turn()
    path.write_text("two\n")
    log.record(str(path), "one\n", "two\n")
    log.begin_turn()  # a turn that changed nothing is skipped

    assert (await log.undo(LocalFiles())).restored == (str(path),)
    assert path.read_text() == "one\n"
    assert (await log.undo(LocalFiles())).restored == (str(path),)
    assert path.read_text() == "zero\n"


async def test_an_unreadable_before_is_never_guessed(tmp_path: Path) -> None:
    path = tmp_path / "secret.key"
    path.write_text("new\n")
    log = ChangeLog()
    log.record(str(path), None, "new\n", known=False)
    report = await log.undo(LocalFiles())
    assert report.restored == () and path.read_text() == "new\n"
    assert "could not be read" in report.refused[0][1]


@dataclass
class RejectingReview:
    """Files whose writes a reviewer rejects whole (as `loopd.lsp.review` reports it)."""

    inner: LocalFiles = field(default_factory=LocalFiles)

    async def read_text(self, path: str) -> str:
        return await self.inner.read_text(path)

    async def write_text(self, path: str, text: str) -> Reviewed | None:
        return Reviewed(None, "The person rejected this change.")


async def test_an_undo_the_reviewer_rejects_is_reported_not_restored(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    log = ChangeLog()
    log.begin_turn()
    path.write_text("agent\n")
    log.record(str(path), "person\n", "agent\n")

    report = await log.undo(RejectingReview())
    assert report.restored == ()
    assert report.refused == ((str(path), "the review did not accept all of it"),)
    assert path.read_text() == "agent\n"
