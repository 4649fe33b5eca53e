import errno
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopd.policy.beneath import (
    FileTooLarge,
    PathEscapeError,
    open_beneath,
    read_text_beneath,
    write_text_beneath,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "ok").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    (root / "esc_link").symlink_to(tmp_path / "secret.txt")
    (root / "abs_link").symlink_to("/etc")
    (root / "dir_link").symlink_to(tmp_path)
    return root


@pytest.mark.parametrize("rel", ["ok", "src/../ok", "./ok"])
def test_paths_inside_open(ws: Path, method: str, rel: str) -> None:
    assert read_text_beneath(str(ws), rel, method=method) == "inside"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "rel",
    [
        "../secret.txt",
        "esc_link",
        "abs_link/hostname",
        "dir_link/secret.txt",
        "/etc/hostname",
        "src/../../secret.txt",
    ],
)
def test_escapes_fail(ws: Path, method: str, rel: str) -> None:
    with pytest.raises(PermissionError):
        read_text_beneath(str(ws), rel, method=method)  # type: ignore[arg-type]


def test_absolute_paths_under_the_root_are_accepted(ws: Path) -> None:
    assert read_text_beneath(str(ws), str(ws / "ok")) == "inside"
    with pytest.raises(PathEscapeError):
        read_text_beneath(str(ws), str(ws.parent / "secret.txt"))


def test_a_directory_swapped_for_a_symlink_after_the_check_cannot_escape(
    ws: Path, method: str
) -> None:
    (ws / "src" / "f").write_text("mine")
    assert read_text_beneath(str(ws), "src/f", method=method) == "mine"  # type: ignore[arg-type]
    # The attacker swaps the checked directory for a link to the outside.
    (ws / "src" / "f").unlink()
    (ws / "src").rmdir()
    (ws / "src").symlink_to(ws.parent)
    with pytest.raises(PermissionError):
        read_text_beneath(str(ws), "src/secret.txt", method=method)  # type: ignore[arg-type]
    with pytest.raises(PermissionError):
        write_text_beneath(str(ws), "src/secret.txt", "pwned", method=method)  # type: ignore[arg-type]
    assert (ws.parent / "secret.txt").read_text() == "outside"


def test_writing_over_a_planted_symlink_replaces_the_link_not_its_target(
    ws: Path, method: str
) -> None:
    write_text_beneath(str(ws), "esc_link", "new", method=method)  # type: ignore[arg-type]
    assert not (ws / "esc_link").is_symlink()
    assert (ws / "esc_link").read_text() == "new"
    assert (ws.parent / "secret.txt").read_text() == "outside"


def test_writes_create_parents_keep_modes_and_leave_no_temp_files(ws: Path, method: str) -> None:
    write_text_beneath(str(ws), "a/b/c.txt", "héllo", method=method)  # type: ignore[arg-type]
    assert (ws / "a/b/c.txt").read_text(encoding="utf-8") == "héllo"
    (ws / "run.sh").write_text("old")
    (ws / "run.sh").chmod(0o755)
    write_text_beneath(str(ws), "run.sh", "new", method=method)  # type: ignore[arg-type]
    assert (ws / "run.sh").stat().st_mode & 0o777 == 0o755
    assert sorted(p.name for p in (ws / "a/b").iterdir()) == ["c.txt"]
    with pytest.raises(FileNotFoundError):
        write_text_beneath(str(ws), "x/y.txt", "z", make_parents=False, method=method)  # type: ignore[arg-type]


def test_size_caps(ws: Path) -> None:
    (ws / "big").write_bytes(b"x" * 2048)
    with pytest.raises(FileTooLarge) as too_large:
        read_text_beneath(str(ws), "big", max_bytes=1024)
    assert too_large.value.size == 2048
    with pytest.raises(FileTooLarge):
        write_text_beneath(str(ws), "out", "y" * 2048, max_bytes=1024)
    assert not (ws / "out").exists()


def test_directories_are_not_files(ws: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_text_beneath(str(ws), "src")
    with pytest.raises(IsADirectoryError):
        write_text_beneath(str(ws), "src", "x")


COMPONENTS = [
    "src",
    "..",
    ".",
    "ok",
    "esc_link",
    "abs_link",
    "dir_link",
    "ws",
    "secret.txt",
    "hostname",
]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=120)
@given(rel=st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=6).map("/".join))
def test_whatever_opens_is_under_the_root(ws: Path, method: str, rel: str) -> None:
    try:
        fd = open_beneath(str(ws), rel, os.O_RDONLY, method=method)  # type: ignore[arg-type]
    except OSError as exc:
        assert exc.errno in (errno.EXDEV, errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EACCES)
        return
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)
    assert opened == str(ws.resolve()) or opened.startswith(str(ws.resolve()) + "/")
