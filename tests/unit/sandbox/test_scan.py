"""The secret scan before each bubblewrap command: nothing an attacker can exhaust."""

from pathlib import Path

import pytest

from loopd.sandbox.scan import TreeTooLarge, scan


def test_the_secret_scan_has_no_limit_to_exhaust(tmp_path: Path) -> None:
    """Deep folders, folders a scan would skip, and a secret placed after many
    entries are all masked."""
    deep = tmp_path / "/".join("abcdefghij")
    deep.mkdir(parents=True)
    (deep / ".env").write_text("x")
    (tmp_path / "node_modules" / "p").mkdir(parents=True)
    (tmp_path / "node_modules" / "p" / "id_rsa").write_text("x")
    many = tmp_path / "many"
    many.mkdir()
    for i in range(3000):
        (many / f"f{i}").touch()
    (tmp_path / "zz" / "later").mkdir(parents=True)
    (tmp_path / "zz" / "later" / "server.key").write_text("x")
    masks = scan([str(tmp_path)], [str(tmp_path)], str(tmp_path / "nohome"))
    assert set(masks.secret_files) == {
        str(deep / ".env"),
        str(tmp_path / "node_modules" / "p" / "id_rsa"),
        str(tmp_path / "zz" / "later" / "server.key"),
    }


def test_a_tree_past_the_ceiling_is_refused_not_run_unmasked(tmp_path: Path) -> None:
    for i in range(20):
        (tmp_path / f"f{i}").touch()
    with pytest.raises(TreeTooLarge, match="too many to check"):
        scan([str(tmp_path)], [str(tmp_path)], str(tmp_path / "nohome"), limit=10)


def test_a_secret_inside_a_masked_folder_is_masked_with_it(tmp_path: Path) -> None:
    """loopd's data dir holds the daemon's socket folder and the login file: each is
    covered by the data dir's mask, never masked again below it (bwrap cannot mount
    on the outer mask's read-only tmpfs, and then runs no command at all)."""
    data = tmp_path / "data"
    (data / "run").mkdir(parents=True)
    (data / "login.json").write_text("{}")
    (tmp_path / "ws").mkdir()
    own = [str(data / "run"), str(data / "login.json"), str(data)]
    masks = scan([str(tmp_path / "ws")], [], str(tmp_path), own)
    assert masks.secret_dirs == (str(data),)
    assert str(data / "login.json") not in masks.secret_files
