"""`DiskReader`: the one reader of workspace and home files stays beneath its roots,
reads regular files only without blocking, bounds what it reads, refuses secrets
(loopd's own folders included) and answers every case with a value."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from tests.unit.fifos import released

from loopd.policy import reading
from loopd.policy.reading import DiskReader
from loopd.protocol.reading import FileRead, ReadRefused


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "AGENTS.md").write_text("the rules\n")
    (root / "AGENTS.md").symlink_to("docs/AGENTS.md")  # inside: followed
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    return root


def reader(ws: Path, method: str = "auto", **kw: object) -> DiskReader:
    home = str(ws.parent / "home")
    return DiskReader((str(ws),), home=home, method=method, **kw)  # type: ignore[arg-type]


def refused(result: FileRead | ReadRefused) -> ReadRefused:
    assert isinstance(result, ReadRefused), result
    return result


def test_reads_a_file_and_follows_a_link_that_stays_inside(ws: Path, method: str) -> None:
    got = reader(ws, method).read(str(ws / "AGENTS.md"), max_bytes=1000)
    assert got == FileRead(str(ws / "docs" / "AGENTS.md"), b"the rules\n", 10)
    assert got.text() == "the rules\n"


@pytest.mark.parametrize("target", ["/proc/self/environ", "home/.ssh/id_rsa", "/etc/passwd"])
def test_a_link_out_of_the_roots_is_refused(ws: Path, method: str, target: str) -> None:
    link = ws / "CLAUDE.md"
    link.symlink_to(target if target.startswith("/") else ws.parent / target)
    got = refused(reader(ws, method).read(str(link), max_bytes=1 << 20))
    assert got.problem == "outside"
    assert "leads outside" in got.reason


def test_kernel_files_are_refused_even_beneath_the_root(tmp_path: Path) -> None:
    everywhere = DiskReader(("/",))
    got = refused(everywhere.read("/proc/self/environ", max_bytes=1 << 20))
    assert got.problem == "secret" and "kernel" in got.reason


def test_fifo_socket_and_device_are_refused_without_blocking(ws: Path, method: str) -> None:
    os.mkfifo(ws / "pipe")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(ws / "sock"))
    (ws / "zero").symlink_to("/dev/zero")
    try:
        with released(ws / "pipe") as blocked:
            assert refused(reader(ws, method).read(str(ws / "pipe"), max_bytes=9)).problem == (
                "special"
            )
            assert isinstance(reader(ws, method).open(str(ws / "pipe")), ReadRefused)
        assert blocked == []
        assert refused(reader(ws, method).read(str(ws / "sock"), max_bytes=9)).problem == "special"
    finally:
        listener.close()
    assert refused(reader(ws, method).read(str(ws / "zero"), max_bytes=9)).problem == "outside"
    dev = DiskReader(("/dev",))
    assert refused(dev.read("/dev/zero", max_bytes=9)).problem == "special"
    assert isinstance(dev.read("/dev/stdin", max_bytes=9), ReadRefused)
    assert refused(dev.read("nul\0byte", max_bytes=9)).problem == "unreadable"
    assert dev.withheld("nul\0byte") is None


def test_missing_and_directories(ws: Path) -> None:
    assert refused(reader(ws).read(str(ws / "nope"), max_bytes=9)).problem == "missing"
    assert refused(reader(ws).read(str(ws / "docs"), max_bytes=9)).problem == "directory"
    assert refused(reader(ws).read(str(ws / "docs/AGENTS.md/x"), max_bytes=9)).problem == (
        "missing"
    )


def test_a_huge_file_costs_the_bound_not_its_size(ws: Path) -> None:
    huge = ws / "SKILL.md"
    with huge.open("wb") as f:
        f.write(b"---\nname: big\n---\n")
        f.truncate(150 * 1024 * 1024)  # sparse: 150 MB to a reader
    cut = reader(ws).read(str(huge), max_bytes=4096, over="cut")
    assert isinstance(cut, FileRead) and cut.cut
    assert len(cut.data) == 4096 and cut.size == 150 * 1024 * 1024
    assert cut.data.startswith(b"---\nname: big")
    whole = refused(reader(ws).read(str(huge), max_bytes=4096))
    assert whole.problem == "too_large" and "over the 4096-byte limit" in whole.reason
    assert whole.size == 150 * 1024 * 1024


def test_secrets_and_loopds_own_folders_wherever_they_are(ws: Path) -> None:
    own = ws / "loopd-home"  # $LOOPD_HOME inside the workspace
    own.mkdir()
    (own / "login.json").write_text('{"key": "sk-secret"}')
    (ws / ".env").write_text("KEY=sk-secret")
    with_own = reader(ws, secrets=(str(own),))
    assert refused(with_own.read(str(own / "login.json"), max_bytes=999)).problem == "secret"
    assert with_own.withheld(str(own / "login.json")) is not None
    assert refused(with_own.read(str(ws / ".env"), max_bytes=999)).problem == "secret"
    assert with_own.withheld(str(ws / "docs" / "AGENTS.md")) is None
    assert with_own.withheld("/etc/passwd") is None  # outside the roots, but no secret
    assert with_own.within(("/etc",)).read("/etc/passwd", max_bytes=1 << 20) == (
        DiskReader(("/etc",)).read("/etc/passwd", max_bytes=1 << 20)
    )
    assert with_own.within(("/etc",)).secrets == (str(own),)


def test_an_exempt_folder_inside_a_secret_location_is_read_but_not_its_keys(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    skills = home / ".config" / "loopd" / "skills"
    (skills / "review").mkdir(parents=True)
    (skills / "review" / "SKILL.md").write_text("review")
    (skills / "review" / "id_rsa").write_text("KEY")
    (home / ".config" / "loopd" / "config.toml").write_text("")
    user = DiskReader((str(skills),), home=str(home), exempt=(str(skills),))
    assert isinstance(user.read(str(skills / "review" / "SKILL.md"), max_bytes=99), FileRead)
    assert refused(user.read(str(skills / "review" / "id_rsa"), max_bytes=99)).problem == "secret"
    tools = DiskReader((str(home),), home=str(home))  # the same file, unexempted
    assert refused(tools.read(str(skills / "review" / "SKILL.md"), max_bytes=99)).problem == (
        "secret"
    )


def test_a_link_swapped_in_between_the_check_and_the_open_is_refused(
    ws: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`realpath` sees a plain folder; before the open it becomes a link to the home's
    keys. The kernel refuses the open beneath the root: a refusal, no exception."""
    (ws / "skills").mkdir()
    (ws / "skills" / "notes.md").write_text("decoy")
    (ws.parent / "home" / ".ssh" / "notes.md").write_text("PRIVATE")
    real = os.path.realpath

    def then_swap(path: str) -> str:
        answer = real(path)
        if path.endswith("notes.md") and (ws / "skills").is_dir():
            (ws / "skills" / "notes.md").unlink()
            (ws / "skills").rmdir()
            (ws / "skills").symlink_to(ws.parent / "home" / ".ssh")
        return answer

    monkeypatch.setattr(reading.os.path, "realpath", then_swap)
    got = refused(
        DiskReader((real(ws),), method=method).read(  # type: ignore[arg-type]
            str(ws / "skills" / "notes.md"), max_bytes=999
        )
    )
    assert got.problem == "outside"
    assert "PRIVATE" not in got.reason
