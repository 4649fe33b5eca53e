"""Checkpoints on a real folder and a real SQLite store: what is kept, what a restore
puts back, and what it refuses to overwrite or write through."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from loopd.checkpoints.service import CheckpointLimits, Checkpoints, Conflict, blob_folder
from loopd.policy.reading import DiskReader
from loopd.protocol.messages import user_text
from loopd.store.sqlite import SessionRecord, SqliteStore

NOW = "2026-01-01T00:00:00Z"


def _service(tmp: Path, **limits: int) -> tuple[Checkpoints, SqliteStore, str]:
    data = tmp / "data"
    store = SqliteStore(data / "sessions.db")
    root = tmp / "work"
    root.mkdir(exist_ok=True)
    if store.get("s1") is None:
        store.create(SessionRecord(id="s1", cwd=str(root.resolve()), created_at=NOW))
    own = (str(data.resolve()),)
    home = str(tmp / "home")
    reader = DiskReader((), home=home, secrets=own)
    service = Checkpoints(
        store, blob_folder(str(data)), reader, home, own, CheckpointLimits(**limits)
    )
    return service, store, str(root.resolve())


def _files(root: str) -> dict[str, str]:
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = (
                "->" + os.readlink(path) if os.path.islink(path) else Path(path).read_text()
            )
    return found


def _turn(service: Checkpoints, root: str, change: object) -> None:
    service.record("s1", "prompt", [root], NOW, label="p")
    change()  # type: ignore[operator]
    service.record("s1", "after", [root], NOW, with_conversation=False)


def test_a_restore_puts_back_every_file_and_redo_puts_back_the_turns(tmp_path: Path) -> None:
    service, _, root = _service(tmp_path)
    work = Path(root)
    (work / "a.txt").write_text("one")
    (work / "src").mkdir()
    (work / "src" / "b.py").write_text("b = 1")
    before = _files(root)

    def change() -> None:
        (work / "a.txt").write_text("two")
        (work / "src" / "b.py").unlink()
        (work / "new").mkdir()
        (work / "new" / "c.txt").write_text("made by bash")

    _turn(service, root, change)
    after = _files(root)
    (first,) = [p for p in service.of("s1") if p.kind == "prompt"]
    report = service.restore("s1", first, "code", NOW)
    assert _files(root) == before
    assert not (work / "new").exists()
    assert sorted(report.written) == [f"{root}/a.txt", f"{root}/src/b.py"]

    redo = [p for p in service.of("s1") if p.kind == "redo"][-1]
    service.restore("s1", redo, "code", NOW)
    assert _files(root) == after


def test_ignored_files_secrets_and_loopds_own_folders_are_not_kept(tmp_path: Path) -> None:
    service, _, root = _service(tmp_path)
    work = Path(root)
    (work / ".gitignore").write_text("build/\n*.log\n")
    (work / "build").mkdir()
    (work / "build" / "out.bin").write_text("generated")
    (work / "x.log").write_text("log")
    (work / ".env").write_text("TOKEN=1")
    (work / "kept.txt").write_text("kept")
    _turn(service, root, lambda: [(work / p).write_text("changed") for p in ("x.log", ".env")])
    (first,) = [p for p in service.of("s1") if p.kind == "prompt"]
    service.restore("s1", first, "code", NOW)
    # Neither was kept, so neither is put back (nor removed): they stay as they are.
    assert (work / "x.log").read_text() == "changed"
    assert (work / ".env").read_text() == "changed"
    assert (work / "build" / "out.bin").read_text() == "generated"


def test_a_file_over_the_limit_is_left_out_and_said(tmp_path: Path) -> None:
    service, _, root = _service(tmp_path, max_file_bytes=10)
    (Path(root) / "big.bin").write_text("x" * 100)
    recorded = service.record("s1", "prompt", [root], NOW)
    assert recorded.point is not None
    assert "big.bin (100 bytes, over max_file_bytes)" in recorded.note
    again = service.record("s1", "after", [root], NOW)
    assert again.point is not None and again.point.left_out == recorded.point.left_out
    assert again.note == ""  # said once, not at every checkpoint


def test_a_full_store_skips_the_checkpoint_and_says_why(tmp_path: Path) -> None:
    service, _, root = _service(tmp_path, max_bytes=50)
    (Path(root) / "a.txt").write_text("y" * 5000)
    recorded = service.record("s1", "prompt", [root], NOW)
    assert recorded.point is None
    assert "Checkpoint skipped" in recorded.note and "max_bytes" in recorded.note
    assert service.of("s1") == []


def test_a_file_the_person_changed_since_is_not_overwritten_silently(tmp_path: Path) -> None:
    service, _, root = _service(tmp_path)
    work = Path(root)
    (work / "a.txt").write_text("one")
    (work / "mine.txt").write_text("mine")
    _turn(service, root, lambda: (work / "a.txt").write_text("agent"))
    (work / "mine.txt").write_text("edited by the person")  # between turns
    _turn(service, root, lambda: None)
    (first, _) = [p for p in service.of("s1") if p.kind == "prompt"]
    with pytest.raises(Conflict) as refused:
        service.restore("s1", first, "code", NOW)
    assert refused.value.paths == (f"{root}/mine.txt",)
    assert (work / "a.txt").read_text() == "agent"  # nothing was restored
    assert [p.kind for p in service.of("s1")].count("redo") == 0

    service.restore("s1", first, "code", NOW, force=True)
    assert (work / "mine.txt").read_text() == "mine"
    assert (work / "a.txt").read_text() == "one"


def test_a_restore_never_writes_through_a_symlink_planted_after(tmp_path: Path) -> None:
    service, _, root = _service(tmp_path)
    work, outside = Path(root), tmp_path / "outside"
    outside.mkdir()
    (work / "src").mkdir()
    (work / "src" / "a.py").write_text("a")

    def plant() -> None:  # the agent swaps src for a link out of the workspace
        (work / "src" / "a.py").unlink()
        (work / "src").rmdir()
        (work / "src").symlink_to(outside)

    _turn(service, root, plant)
    (first,) = [p for p in service.of("s1") if p.kind == "prompt"]
    service.restore("s1", first, "code", NOW)
    assert not (work / "src").is_symlink()
    assert (work / "src" / "a.py").read_text() == "a"
    assert list(outside.iterdir()) == []


def test_a_link_swapped_in_during_the_restore_is_a_refusal(tmp_path: Path) -> None:
    from loopd.checkpoints import manifest
    from loopd.checkpoints.restore import apply

    service, _, root = _service(tmp_path)
    work, outside = Path(root), tmp_path / "outside"
    outside.mkdir()
    (work / "src").mkdir()
    (work / "src" / "a.py").write_text("a")
    point = service.record("s1", "prompt", [root], NOW).point
    assert point is not None
    wanted = manifest.load(service.blobs, point.roots[root])
    (work / "src" / "a.py").unlink()
    (work / "src").rmdir()
    (work / "src").symlink_to(outside)  # planted after the current state was read
    done = apply(root, service.blobs, wanted, {}, lambda path: True)
    assert [p for p, _ in done.failed] == ["src/a.py"]
    assert list(outside.iterdir()) == []


def test_checkpoints_and_the_conversation_survive_a_restart(tmp_path: Path) -> None:
    service, store, root = _service(tmp_path)
    (Path(root) / "a.txt").write_text("one")
    store.append_message("s1", user_text("first"))
    service.record("s1", "prompt", [root], NOW, label="first")
    store.append_message("s1", user_text("second"))
    (Path(root) / "a.txt").write_text("two")  # the turn's change
    service.record("s1", "after", [root], NOW, with_conversation=False)
    store.close()

    again, store, _ = _service(tmp_path)  # a new process: the rows and blobs are still there
    first, after = again.of("s1")
    assert (first.kind, first.prompt, first.label) == ("prompt", 1, "first")
    assert after.kind == "after"
    report = again.restore("s1", first, "both", NOW)
    assert (Path(root) / "a.txt").read_text() == "one"
    assert report.messages == 1
    assert [m.parts for m in store.messages("s1")] == [user_text("first").parts]


def test_an_unchanged_file_keeps_its_digest_unread(tmp_path: Path) -> None:
    """The previous manifest's digest is reused when the stat matches: a scan given
    a made-up digest for an unchanged file keeps it (it did not read the file), and
    reads a file whose stat changed."""
    from dataclasses import replace

    from loopd.checkpoints.blobs import BlobStore
    from loopd.checkpoints.scan import RACY_NS, Scan

    root = tmp_path / "work"
    root.mkdir()
    (root / "same.txt").write_text("same")
    (root / "touched.txt").write_text("old")
    blobs = BlobStore(str(tmp_path / "blobs"))
    reader = DiskReader((str(root),), home=str(tmp_path))
    later = lambda: time.time_ns() + 10 * RACY_NS  # noqa: E731 (the files are old by then)
    first = Scan(str(root), reader, blobs, {}, str(tmp_path), (), 1000, 10**6, later).run()
    made_up = "f" * 64
    previous = {p: replace(e, digest=made_up) for p, e in first.items()}
    (root / "touched.txt").write_text("new")
    again = Scan(str(root), reader, blobs, previous, str(tmp_path), (), 1000, 10**6, later).run()
    assert again["same.txt"].digest == made_up
    assert again["touched.txt"].digest not in (made_up, first["touched.txt"].digest)


def test_credentials_under_home_and_loopds_folders_in_a_root_are_not_kept(
    tmp_path: Path,
) -> None:
    """A root that holds the home's credential folders (a session opened on ~) or
    loopd's own data keeps neither: the file tools' secret rule, placed by path."""
    from loopd.checkpoints import manifest

    home = tmp_path / "home"
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text("token: x")
    (home / "Own" / "data").mkdir(parents=True)
    (home / "Own" / "data" / "sessions.txt").write_text("a whole conversation")
    (home / "notes.txt").write_text("fine")
    data = tmp_path / "data"
    store = SqliteStore(data / "sessions.db")
    store.create(SessionRecord(id="s1", cwd=str(home), created_at=NOW))
    own = (str(home / "own" / "DATA"),)  # matched without regard to case, as the tools do
    reader = DiskReader((), home=str(home), secrets=own)
    service = Checkpoints(store, blob_folder(str(data)), reader, str(home), own)
    point = service.record("s1", "prompt", [str(home.resolve())], NOW).point
    assert point is not None
    kept = manifest.load(service.blobs, point.roots[str(home.resolve())])
    assert sorted(kept) == ["notes.txt"]


def test_rewind_words_are_checked() -> None:
    from loopd.protocol.errors import ConfigError
    from loopd.sessions.rewind import RewindArgs, parse_rewind

    assert parse_rewind([]) is None
    assert parse_rewind(["2", "code", "force"]) == RewindArgs(2, "code", True)
    assert parse_rewind(["redo"]) == RewindArgs(None)
    for words in (["two"], ["1", "files"], ["-1"]):
        with pytest.raises(ConfigError):
            parse_rewind(words)


def test_a_file_the_checkpoint_never_saw_is_not_removed(tmp_path: Path) -> None:
    """Ignored when the checkpoint was taken, not ignored now (the turn changed the
    .gitignore): the restore puts the .gitignore back and leaves the file alone."""
    service, _, root = _service(tmp_path)
    work = Path(root)
    (work / ".gitignore").write_text("*.log\nlogs/\n")
    (work / "app.log").write_text("the person's log")
    (work / "logs").mkdir()
    (work / "logs" / "old.txt").write_text("older log")
    _turn(service, root, lambda: (work / ".gitignore").write_text(""))
    (first,) = [p for p in service.of("s1") if p.kind == "prompt"]
    service.restore("s1", first, "code", NOW)
    assert (work / ".gitignore").read_text() == "*.log\nlogs/\n"
    assert (work / "app.log").read_text() == "the person's log"
    assert (work / "logs" / "old.txt").read_text() == "older log"


def test_a_file_changing_while_it_is_read_is_left_out_not_dropped(tmp_path: Path) -> None:
    """A file that is no longer what was listed when it is read is listed without a
    blob: a restore to that checkpoint leaves the path as it finds it."""
    from loopd.checkpoints import manifest
    from loopd.checkpoints.scan import Scan

    service, _, root = _service(tmp_path, max_file_bytes=100)
    work = Path(root)
    (work / "grows.txt").write_text("small")

    class RacedScan(Scan):  # the file grows between the listing and the read
        def _keep(self, fd: int, rel: str, name: str, info: os.stat_result) -> None:
            (work / "grows.txt").write_text("x" * 500)
            super()._keep(fd, rel, name, info)

    reader = DiskReader((root,), home=str(tmp_path))
    scan = RacedScan(root, reader, service.blobs, {}, str(tmp_path), (), 100, 10**6)
    kept = scan.run()
    assert not kept["grows.txt"].kept
    (said,) = scan.left_out
    assert said.startswith("grows.txt (it changed while it was read:") and "over" in said
    assert manifest.differing(kept, {}) == {"grows.txt"}


def test_a_root_named_through_a_symlink_still_hides_loopds_own_data(tmp_path: Path) -> None:
    """The session's folder given as a link to the real one: its data folder inside
    is still recognised as loopd's (roots are canonical before they are scanned)."""
    from loopd.checkpoints import manifest

    real = tmp_path / "real"
    (real / "data").mkdir(parents=True)
    (real / "data" / "sessions.db").write_text("conversations")
    (real / "code.py").write_text("x = 1")
    (tmp_path / "link").symlink_to(real)
    store = SqliteStore(tmp_path / "store" / "sessions.db")
    store.create(SessionRecord(id="s1", cwd=str(tmp_path / "link"), created_at=NOW))
    own = (str((real / "data").resolve()),)
    reader = DiskReader((), home=str(tmp_path), secrets=own)
    folder = blob_folder(str(tmp_path / "store"))
    service = Checkpoints(store, folder, reader, str(tmp_path), own)
    point = service.record("s1", "prompt", [str(tmp_path / "link")], NOW).point
    assert point is not None
    (root,) = point.roots
    assert root == str(real.resolve())
    assert sorted(manifest.load(service.blobs, point.roots[root])) == ["code.py"]


def test_a_turn_without_its_after_checkpoint_counts_as_changed_outside(tmp_path: Path) -> None:
    """Fail-closed: where a turn's `after` is missing (loopd was killed mid-turn), what
    changed since its prompt cannot be told apart from the person's edits: asked."""
    service, _, root = _service(tmp_path)
    work = Path(root)
    (work / "a.txt").write_text("one")
    service.record("s1", "prompt", [root], NOW, label="p")
    (work / "a.txt").write_text("changed by someone")  # no `after` follows
    (first,) = service.of("s1")
    with pytest.raises(Conflict) as refused:
        service.restore("s1", first, "code", NOW)
    assert refused.value.paths == (f"{root}/a.txt",)


def test_too_deep_a_tree_and_too_many_files_are_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopd.checkpoints import scan

    service, _, root = _service(tmp_path)
    deep = Path(root, *(f"d{i}" for i in range(scan.MAX_DEPTH + 3)))
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("far down")
    recorded = service.record("s1", "prompt", [root], NOW)
    assert recorded.point is not None
    assert f"deeper than {scan.MAX_DEPTH} folders" in recorded.note

    monkeypatch.setattr(scan, "MAX_FILES", 3)
    for n in range(5):
        (Path(root) / f"f{n}.txt").write_text(str(n))
    skipped = service.record("s1", "prompt", [root], NOW)
    assert skipped.point is None
    assert "holds over 3 files" in skipped.note and "Checkpoint skipped" in skipped.note


def test_a_full_store_first_frees_what_deleted_sessions_left(tmp_path: Path) -> None:
    from loopd.checkpoints.collect import GRACE

    service, store, root = _service(tmp_path, max_bytes=3000)
    (Path(root) / "big.txt").write_bytes(os.urandom(2000))  # does not compress
    assert service.record("s1", "prompt", [root], NOW).point is not None
    old = os.path.getmtime(service.folder) - GRACE - 60
    for folder, _, names in os.walk(service.folder):
        for name in names:
            os.utime(os.path.join(folder, name), (old, old))
    store.delete("s1")  # its checkpoints go with it; their blobs stay, unreferenced
    other = tmp_path / "other"
    other.mkdir()
    (other / "big.txt").write_bytes(os.urandom(2000))
    store.create(SessionRecord(id="s2", cwd=str(other.resolve()), created_at=NOW))
    service._newest.clear()  # as in a new process
    recorded = service.record("s2", "prompt", [str(other.resolve())], NOW)
    assert recorded.point is not None, recorded.note
    assert service.book.used() < 3000
