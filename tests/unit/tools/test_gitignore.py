"""The `.gitignore` matcher: git's pattern syntax, checked against paths."""

import os
from pathlib import Path

import pytest
from tests.unit.fifos import released

from loopd.policy.reading import DiskReader
from loopd.tools.gitignore import Ignore, inherited, read_ignore_file


def ignore(text: str, base: tuple[str, ...] = ()) -> Ignore:
    return Ignore().extended(base, text)


def p(path: str) -> tuple[str, ...]:
    return tuple(path.split("/"))


@pytest.mark.parametrize(
    ("text", "path", "is_dir", "expected"),
    [
        ("*.log", "a.log", False, True),
        ("*.log", "deep/er/a.log", False, True),  # no slash: any depth
        ("*.log", "a.logx", False, False),
        ("/top.txt", "top.txt", False, True),  # anchored
        ("/top.txt", "sub/top.txt", False, False),
        ("doc/*.md", "doc/a.md", False, True),  # a middle slash anchors too
        ("doc/*.md", "x/doc/a.md", False, False),
        ("doc/*.md", "doc/sub/a.md", False, False),  # `*` stays in one component
        ("build/", "build", True, True),  # directories only
        ("build/", "build", False, False),
        ("build/", "src/build", True, True),
        ("**/cache", "a/b/cache", True, True),
        ("**/cache", "cache", False, True),
        ("logs/**", "logs/a/b.txt", False, True),
        ("logs/**", "logs", True, False),
        ("a/**/z", "a/z", False, True),
        ("a/**/z", "a/b/c/z", False, True),
        ("a/**/z", "b/a/z", False, False),
        ("file?.txt", "file1.txt", False, True),
        ("file?.txt", "file10.txt", False, False),
        ("[ab].txt", "b.txt", False, True),
        ("[!ab].txt", "b.txt", False, False),
        ("[!ab].txt", "c.txt", False, True),
        ("\\#hash", "#hash", False, True),
        ("# comment", "# comment", False, False),
        ("\\!bang", "!bang", False, True),
        ("trail\\ ", "trail ", False, True),
        ("trail   ", "trail", False, True),
    ],
)
def test_patterns_follow_git(text: str, path: str, is_dir: bool, expected: bool) -> None:
    assert ignore(text).ignored(p(path), is_dir) is expected


def test_the_last_matching_pattern_wins_and_negation_re_includes() -> None:
    rules = ignore("*.log\n!keep.log\n")
    assert rules.ignored(p("a.log"), False)
    assert not rules.ignored(p("keep.log"), False)
    assert ignore("!keep.log\n*.log\n").ignored(p("keep.log"), False)


def test_a_nested_file_applies_below_its_directory_only_and_after_the_root() -> None:
    rules = ignore("*.tmp\n").extended(p("sub"), "!x.tmp\n/local\n")
    assert rules.ignored(p("x.tmp"), False)
    assert not rules.ignored(p("sub/x.tmp"), False)
    assert rules.ignored(p("sub/local"), False)
    assert not rules.ignored(p("local"), False)
    assert not rules.ignored(p("sub/deeper/local"), False)  # anchored to sub/


def test_rules_from_above_the_root_are_rebased(tmp_path: Path) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("*.excluded\n")
    (tmp_path / ".gitignore").write_text("/pkg/gen/\n*.o\n/top-only\n")
    (tmp_path / "pkg" / "gen").mkdir(parents=True)
    rules = inherited(str(tmp_path / "pkg"), str(tmp_path), DiskReader((str(tmp_path),)))
    assert rules.ignored(p("gen"), True)
    assert rules.ignored(p("a/b.o"), False)
    assert rules.ignored(p("x.excluded"), False)
    assert not rules.ignored(p("top-only"), False)  # anchored at the top, not at pkg/
    # never above the workspace root: the same repository seen from a root below it
    below = inherited(str(tmp_path / "pkg"), str(tmp_path / "pkg"), DiskReader((str(tmp_path),)))
    assert not below.ignored(p("a.o"), False)


def test_an_ignore_file_that_is_not_a_regular_file_is_not_read(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.write_text("*\n")
    (ws / "plain").write_text("*.o\n")
    (ws / "inside").symlink_to("plain")  # a link that stays beneath the root is followed
    (ws / "link").symlink_to(outside)
    os.mkfifo(ws / "fifo")  # opening it for reading would block a plain open()
    (ws / ".env").write_text("*\n")  # a secret is not read, even as ignore rules
    reader = DiskReader((str(ws),))
    with released(ws / "fifo") as blocked:
        assert read_ignore_file(reader, str(ws / "fifo")) == ""
    assert blocked == []
    assert read_ignore_file(reader, str(ws / "link")) == ""
    assert read_ignore_file(reader, str(ws / "missing")) == ""
    assert read_ignore_file(reader, str(ws / ".env")) == ""
    assert read_ignore_file(reader, str(ws / "plain")) == "*.o\n"
    assert read_ignore_file(reader, str(ws / "inside")) == "*.o\n"
