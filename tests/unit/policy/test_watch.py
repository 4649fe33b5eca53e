"""`PathWatch` sees every change to an entry on a path, and only those."""

from __future__ import annotations

import os
from pathlib import Path

from loopd.policy.watch import PathWatch


def tree(tmp_path: Path) -> Path:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    return tmp_path / "a" / "b" / "f"


def test_nothing_moved(tmp_path: Path) -> None:
    target = tree(tmp_path)
    with PathWatch(str(tmp_path), str(target)) as watch:
        target.write_text("content changes are not moves")
        (tmp_path / "unrelated").mkdir()
        (tmp_path / "a" / "sibling").write_text("y")
        assert not watch.moved()


def test_a_swapped_component_anywhere_on_the_path_is_seen(tmp_path: Path) -> None:
    target = tree(tmp_path)
    for component in (tmp_path / "a", tmp_path / "a" / "b", target):
        with PathWatch(str(tmp_path), str(target)) as watch:
            os.rename(component, component.with_name("away"))
            os.rename(component.with_name("away"), component)  # and back: still seen
            assert watch.moved(), component


def test_a_path_that_cannot_be_watched_counts_as_moved(tmp_path: Path) -> None:
    tree(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    with PathWatch(str(tmp_path), str(tmp_path / "link" / "b" / "f")) as watch:
        assert watch.moved()  # a symlink on the way is never proven
    with PathWatch(str(tmp_path), str(tmp_path / "missing" / "f")) as watch:
        assert watch.moved()
