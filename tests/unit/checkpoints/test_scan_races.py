"""The checkpoint scan against a repository that changes under it (real folders, real
FIFOs and links): the stat cache reuses a digest only for the very file it read,
and a file swapped between the listing and the read is left out (never followed,
never waited on) or, a regular file again, read again by the next scan."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from loopd.checkpoints.blobs import BlobStore, digest_of
from loopd.checkpoints.manifest import Entry
from loopd.checkpoints.scan import RACY_NS, Scan
from loopd.policy.reading import DiskReader

MADE_UP = "f" * 64


def later() -> int:
    """The wall clock of a scan taken well after the files were written."""
    return time.time_ns() + 10 * RACY_NS


def scan(
    tmp: Path,
    previous: dict[str, Entry] | None = None,
    kind: type[Scan] = Scan,
    clock: Callable[[], int] = later,
) -> Scan:
    root = str((tmp / "work").resolve())
    reader = DiskReader((root,), home=str(tmp / "home"))
    blobs = BlobStore(str(tmp / "blobs"))
    done = kind(root, reader, blobs, previous or {}, str(tmp / "home"), (), 1000, 10**6, clock)
    done.run()
    return done


def made_up(kept: dict[str, Entry]) -> dict[str, Entry]:
    """`kept` with every digest replaced: a scan that reuses one did not read the file."""
    return {p: Entry(MADE_UP, *_fields(e)) for p, e in kept.items()}


def _fields(e: Entry) -> tuple[int, ...]:
    return (e.mode, e.size, e.mtime_ns, e.ino, e.ctime_ns, e.dev)


def test_an_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "same.txt").write_text("same")
    first = scan(tmp_path).manifest
    assert scan(tmp_path, made_up(first)).manifest["same.txt"].digest == MADE_UP


def test_a_replacement_of_the_same_size_and_mtime_is_read(tmp_path: Path) -> None:
    """In place (the ctime moves) and renamed over (the inode and ctime move)."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("inplace.txt", "renamed.txt"):
        (work / name).write_text("aaaa")
    first = scan(tmp_path).manifest
    old = (work / "inplace.txt").stat()
    (work / "inplace.txt").write_text("bbbb")
    os.utime(work / "inplace.txt", ns=(old.st_atime_ns, old.st_mtime_ns))
    old = (work / "renamed.txt").stat()
    (work / "new.tmp").write_text("cccc")
    os.utime(work / "new.tmp", ns=(old.st_atime_ns, old.st_mtime_ns))
    os.replace(work / "new.tmp", work / "renamed.txt")
    again = scan(tmp_path, made_up(first)).manifest
    assert again["inplace.txt"].digest == digest_of(b"bbbb")
    assert again["renamed.txt"].digest == digest_of(b"cccc")


def test_a_file_changed_just_before_the_scan_is_read_again_next_time(tmp_path: Path) -> None:
    """Its stamp could stay the same through a second change in the same clock tick."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "fresh.txt").write_text("fresh")
    first = scan(tmp_path, clock=time.time_ns).manifest
    assert first["fresh.txt"].digest == digest_of(b"fresh")
    assert scan(tmp_path, made_up(first)).manifest["fresh.txt"].digest == digest_of(b"fresh")


def test_fifos_and_sockets_are_passed_over_unopened(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    os.mkfifo(work / "pipe")  # opening it to read would block the scan forever
    (work / "plain.txt").write_text("plain")
    kept = scan(tmp_path).manifest
    assert set(kept) == {"plain.txt"}


class _Swapped(Scan):
    """Between the listing and the read, `target.txt` becomes what `swap` makes."""

    swap: str = ""

    def _keep(self, fd: int, rel: str, name: str, info: os.stat_result) -> None:
        if rel == "target.txt":
            path = Path(self.root) / rel
            path.unlink()
            match self.swap:
                case "fifo":
                    os.mkfifo(path)
                case "link":
                    path.symlink_to(Path(self.home) / "secret.txt")
                case "other":
                    path.write_text("another file")
        super()._keep(fd, rel, name, info)


def _swapped(tmp: Path, swap: str) -> Scan:
    work = tmp / "work"
    work.mkdir()
    (tmp / "home").mkdir()
    (tmp / "home" / "secret.txt").write_text("outside the root")
    (work / "target.txt").write_text("listed")
    kind = type(f"Swapped_{swap}", (_Swapped,), {"swap": swap})
    return scan(tmp, kind=kind)


def test_a_file_swapped_for_a_fifo_is_left_out_without_waiting(tmp_path: Path) -> None:
    done = _swapped(tmp_path, "fifo")
    assert not done.manifest["target.txt"].kept
    assert done.left_out == ["target.txt (it changed while it was read: " + _why(done) + ")"]


def test_a_file_swapped_for_a_link_out_is_never_followed(tmp_path: Path) -> None:
    done = _swapped(tmp_path, "link")
    assert not done.manifest["target.txt"].kept
    assert done.left_out[0].startswith("target.txt (it changed while it was read:")
    assert not os.path.exists(done.blobs.path(digest_of(b"outside the root")))


def test_a_file_replaced_after_the_listing_is_read_again_next_time(tmp_path: Path) -> None:
    """What was read is kept with the stamp listed before the read: the next scan
    finds another stamp (the inode may be the freed one reused, the size and ctime
    are not) and reads the file again."""
    done = _swapped(tmp_path, "other")
    kept = done.manifest["target.txt"]
    assert kept.digest == digest_of(b"another file")
    again = scan(tmp_path, made_up(done.manifest)).manifest["target.txt"]
    assert again.digest == digest_of(b"another file")


def _why(done: Scan) -> str:
    return done.left_out[0].split("it changed while it was read: ", 1)[1].rstrip(")")
