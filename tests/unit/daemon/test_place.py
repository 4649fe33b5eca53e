"""Where a data dir's daemon listens, and what makes its folder and socket private."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from loopd.daemon.place import Unsafe, place_of, short_path


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"LOOPD_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)} | extra


def test_each_data_dir_has_its_own_socket(tmp_path: Path) -> None:
    one, two = place_of(env(tmp_path)), place_of({"LOOPD_HOME": str(tmp_path / "other")})
    assert one.folder == str(tmp_path / "data" / "run")
    assert one.endpoint != two.endpoint
    same = place_of({"LOOPD_HOME": str(tmp_path / "x" / ".." / "data")})
    assert same.name == one.name  # the real path names it


def test_the_runtime_dir_is_used_when_it_is_this_user_s(tmp_path: Path) -> None:
    runtime = tmp_path / "run-user"
    runtime.mkdir()
    assert place_of(env(tmp_path, XDG_RUNTIME_DIR=str(runtime))).folder == str(runtime / "loopd")
    relative = place_of(env(tmp_path, XDG_RUNTIME_DIR="run-user"))
    assert relative.folder == str(tmp_path / "data" / "run")
    missing = place_of(env(tmp_path, XDG_RUNTIME_DIR=str(tmp_path / "nope")))
    assert missing.folder == str(tmp_path / "data" / "run")


def test_prepare_makes_a_private_folder_and_refuses_a_loose_or_linked_one(
    tmp_path: Path,
) -> None:
    place = place_of(env(tmp_path))
    assert place.connect() is None  # never prepared: nobody listens, nothing to refuse
    place.prepare()
    folder = Path(place.folder)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert place.connect() is None  # nobody listens: no error
    folder.chmod(0o750)
    with pytest.raises(Unsafe, match="open to others"):
        place.prepare()
    folder.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    folder.symlink_to(elsewhere)
    with pytest.raises(Unsafe, match="is not a folder"):
        place.connect()


def test_a_file_where_the_socket_should_be_is_refused(tmp_path: Path) -> None:
    place = place_of(env(tmp_path))
    place.prepare()
    Path(place.endpoint).write_text("")
    os.chmod(place.endpoint, 0o600)
    with pytest.raises(Unsafe, match="is not a socket"):
        place.connect()


def test_a_deep_data_dir_still_gets_a_socket(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    place = place_of({"LOOPD_HOME": str(deep)})
    place.prepare()
    assert len(str(place.endpoint)) > 107  # past what a socket address holds
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    listener.bind(short_path(place.endpoint))
    os.umask(old)
    listener.listen(1)
    with listener:
        conn = place.connect()
        assert conn is not None
        conn.close()
