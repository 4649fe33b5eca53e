"""Rule globs are matched in bounded time: an untrusted workspace file may add
`deny` and `ask` rules, and the model picks the paths they are checked against."""

from __future__ import annotations

import pytest

from loopd.policy.rules import MatchContext, path_matches

CTX = MatchContext(("/ws",), "/home/u")
BACKTRACKS = "*a*a*a*a*a*a*a*a*a*a*a*a*b"  # as a regular expression: ~10^12 steps


@pytest.mark.parametrize("fold", [False, True])
def test_a_backtracking_rule_glob_is_matched_without_backtracking(fold: bool) -> None:
    # Not named in the issue: another parser a repository's file feeds.
    assert not path_matches(BACKTRACKS, "/ws/" + "a" * 80, CTX, fold=fold)
    assert path_matches(BACKTRACKS, "/ws/deep/" + "a" * 80 + "b", CTX, fold=fold)


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("src/**", "/ws/src/a/b.py", True),
        ("src/**/*.py", "/ws/src/b.py", True),
        ("src/*.py", "/ws/src/a/b.py", False),
        ("*.sqlite", "/ws/x/y.SQLITE", True),  # folded
        ("/etc/pass?d", "/etc/passwd", True),
        ("~/.ssh/**", "/home/u/.ssh/id_rsa", True),
        ("a\\*b", "/ws/a*b", True),
        ("a\\*b", "/ws/axb", False),
    ],
)
def test_rule_globs_keep_their_meaning(glob: str, path: str, expected: bool) -> None:
    assert path_matches(glob, path, CTX, fold=True) is expected
