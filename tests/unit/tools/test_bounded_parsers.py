"""Parsers and walks a repository (or the model) cannot turn against loopd: the
`.gitignore` and glob matcher is linear by construction and never raises on a
pattern, and every walk is iterative, so a tree of any depth is walked whole."""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tooltest import Call, RecordingProgress

from loopd.engine.done import DoneSet
from loopd.engine.ports import ToolCall
from loopd.sandbox.scan import scan
from loopd.tools import ToolEnv, ToolRegistry
from loopd.tools.criteria import SandboxedDone
from loopd.tools.gitignore import Ignore
from loopd.tools.grep import Grep

DEPTH = 1_100  # past Python's default recursion limit of 1,000


@pytest.fixture(autouse=True)
def remove_deep_trees(tmp_path: Path) -> Iterator[None]:
    """Takes each deep tree away again, from the bottom up: pytest's own clean-up of
    old temporary folders recurses, and would fail on one."""
    yield
    top = tmp_path / "d"
    if not top.is_dir():
        return
    fd = os.open(tmp_path, os.O_RDONLY)
    chain = [fd]
    while "d" in os.listdir(chain[-1]):
        chain.append(os.open("d", os.O_RDONLY, dir_fd=chain[-1]))
    for parent, child in reversed(list(itertools.pairwise(chain))):
        for name in os.listdir(child):
            if name != "d":
                os.unlink(name, dir_fd=child)
        os.close(child)
        os.rmdir("d", dir_fd=parent)
    os.close(fd)


def deep_tree(root: Path, leaf: str) -> Path:
    """`root/d/d/.../d/leaf` DEPTH folders down; returns the leaf's folder."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(DEPTH):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open(leaf, os.O_WRONLY | os.O_CREAT, dir_fd=fd), "w") as f:
            f.write("needle\n")
    finally:
        os.close(fd)
    return root.joinpath(*["d"] * DEPTH)


def test_a_backtracking_pattern_is_matched_without_backtracking() -> None:
    # As a regular expression this is ~10^9 steps per name: every session froze.
    rules = Ignore().extended((), "*a*a*a*a*a*a*a*a*a*a*a*a*b\n")
    assert not rules.ignored(("a" * 60,), is_dir=False)
    assert rules.ignored(("a" * 60 + "b",), is_dir=False)


@pytest.mark.parametrize("bad", ["[z-a]", "[[:nope:]].txt", "[", "\\", "[!]"])
async def test_a_bad_pattern_never_breaks_glob(call: Call, tmp_path: Path, bad: str) -> None:
    (tmp_path / ".gitignore").write_text(f"{bad}\n*.log\n")
    (tmp_path / "a.log").write_text("")
    (tmp_path / "a.txt").write_text("")
    outcome = await call("glob", pattern="a.*")
    assert not outcome.result.is_error
    assert outcome.result.output.splitlines() == ["a.txt"]


def test_an_unknown_class_is_ignored_with_a_notice(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        rules = Ignore().extended((), "[[:nope:]]\n")
    assert not rules.rules
    assert "[:nope:]" in caplog.text


def test_a_backwards_range_matches_nothing_as_in_git() -> None:
    rules = Ignore().extended((), "[z-a].txt\n[a-c].md\n")
    assert not rules.ignored(("m.txt",), is_dir=False)
    assert rules.ignored(("b.md",), is_dir=False)


async def test_glob_walks_a_tree_of_any_depth(call: Call, tmp_path: Path) -> None:
    deep_tree(tmp_path, "leaf.py")
    outcome = await call("glob", pattern="**/leaf.py")
    assert not outcome.result.is_error, outcome.result.output
    assert outcome.result.output.endswith("/d/leaf.py")


async def test_a_glob_pattern_of_any_length_is_matched(call: Call, tmp_path: Path) -> None:
    # Not named in the issue: the model's own pattern, DEPTH components long.
    deep_tree(tmp_path, "leaf.py")
    outcome = await call("glob", pattern="/".join(["*"] * DEPTH) + "/leaf.py")
    assert not outcome.result.is_error, outcome.result.output
    assert outcome.result.output.endswith("/d/leaf.py")


async def test_grep_without_ripgrep_walks_a_tree_of_any_depth(env: ToolEnv, tmp_path: Path) -> None:
    # Not named in the issue: grep's own walk when ripgrep is missing.
    deep_tree(tmp_path, "leaf.txt")
    grep = ToolRegistry(env, [Grep(None)])
    result = await grep.run(ToolCall("c1", "grep", {"pattern": "needle"}), RecordingProgress())
    assert not result.is_error, result.output
    assert result.output.endswith("/d/leaf.txt:1: needle")


def test_the_pre_command_scan_walks_a_tree_of_any_depth(tmp_path: Path) -> None:
    leaf = deep_tree(tmp_path, ".env")
    masks = scan((str(tmp_path),), (str(tmp_path),), str(tmp_path / "home"))
    assert masks.secret_files == (os.path.realpath(leaf / ".env"),)


async def test_done_criteria_watch_a_tree_of_any_depth(env: ToolEnv, tmp_path: Path) -> None:
    leaf = deep_tree(tmp_path, "test_x.py")
    done = SandboxedDone(env, DoneSet(protected=("**/test_*.py",)))
    await done.begin_turn()
    (leaf / "test_x.py").write_text("weakened, and longer\n")
    assert (await done.protected_writes()).paths[0].endswith("/d/test_x.py")


def test_the_matcher_agrees_with_fnmatch_on_every_small_pattern() -> None:
    # Every pattern and name of up to 4 characters over `ab*?` (fnmatch is the
    # regular-expression reference; on inputs this small it cannot blow up).
    import fnmatch
    import itertools

    from loopd.tools.wildmatch import component

    def words(alphabet: str, most: int) -> list[str]:
        return ["".join(w) for n in range(most + 1) for w in itertools.product(alphabet, repeat=n)]

    names = words("ab", 4)
    for pattern in words("ab*?", 4):
        compiled = component(pattern)
        for name in names:
            assert compiled.match(name) == fnmatch.fnmatchcase(name, pattern), (pattern, name)
