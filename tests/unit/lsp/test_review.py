"""The pure parts of `loopd/review/*`: hunks, the answer's reading, the opt-in and its
`alwaysAsk` globs."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types

from loopd.lsp.hunks import Proposal
from loopd.lsp.link import ClientOptions
from loopd.lsp.review import ALWAYS_ASK, ReviewOptions, accepted_of

OLD = "one\ntwo\nthree\nfour\nfive\n"
NEW = "ONE\ntwo\nthree\n4\n4.5\nfive\nsix\n"


def test_hunks_are_the_runs_of_changed_lines_in_file_order() -> None:
    proposal = Proposal.of(OLD, NEW)
    assert [h.to_wire() for h in proposal.hunks] == [
        {"index": 0, "oldStart": 0, "oldLines": 1, "newStart": 0, "newLines": 1,
         "oldText": "one\n", "newText": "ONE\n"},
        {"index": 1, "oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": 2,
         "oldText": "four\n", "newText": "4\n4.5\n"},
        {"index": 2, "oldStart": 5, "oldLines": 0, "newStart": 6, "newLines": 1,
         "oldText": "", "newText": "six\n"},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("accepted", "text"),
    [
        ((), OLD),
        ((0, 1, 2), NEW),
        ((1,), "one\ntwo\nthree\n4\n4.5\nfive\n"),
        ((0, 2), "ONE\ntwo\nthree\nfour\nfive\nsix\n"),
    ],
)
def test_applying_takes_exactly_the_accepted_hunks(accepted: tuple[int, ...], text: str) -> None:
    assert Proposal.of(OLD, NEW).apply(accepted) == text


def test_a_new_file_is_one_hunk_and_no_line_ending_is_lost() -> None:
    proposal = Proposal.of(None, "a\r\nb")
    assert len(proposal.hunks) == 1
    assert proposal.apply({0}) == "a\r\nb"
    assert proposal.apply(()) == ""


def test_the_note_names_each_rejected_hunk_and_only_those() -> None:
    note = Proposal.of(OLD, NEW).note({0, 2}, "app.py")
    assert note.startswith("The person reviewed this change to app.py and rejected 1 of its 3")
    assert "Rejected hunk 2 (old lines 4-4):\n-four\n+4\n+4.5" in note
    assert "ONE" not in note and "six" not in note
    assert Proposal.of(OLD, NEW).note({0, 1, 2}, "app.py") == ""
    assert "the file is unchanged" in Proposal.of(OLD, NEW).note((), "app.py")


@pytest.mark.parametrize(
    ("reply", "accepted"),
    [
        ({"hunks": [{"index": 0, "decision": "accept"}, {"index": 1, "decision": "reject"}]}, {0}),
        ({"hunks": [{"index": 1, "decision": "ACCEPT"}]}, set()),  # unknown word: no
        ({"hunks": [{"index": 7, "decision": "accept"}]}, set()),  # no such hunk
        ({"hunks": [{"index": -1, "decision": "accept"}]}, set()),
        ({"hunks": [{"index": True, "decision": "accept"}]}, set()),  # a bool is no index
        ({"hunks": [{"index": "0", "decision": "accept"}]}, set()),
        ({"hunks": "all"}, set()),
        ({"hunks": [None, 3]}, set()),
        (None, set()),
        ([], set()),
    ],
)
def test_only_what_the_answer_plainly_accepts_is_accepted(reply: Any, accepted: set[int]) -> None:
    assert accepted_of(reply, 3) == accepted


@pytest.mark.parametrize(
    ("path", "asks"),
    [
        ("/w/app.py", False),
        ("/w/.env", True),
        ("/w/.env.local", True),
        ("/w/config/.env", True),  # a name glob matches at any depth
        ("/w/.vscode/settings.json", True),
        ("/w/.VSCODE/settings.json", True),  # folded: more paths ask, never fewer
        ("/w/.git/hooks/pre-commit", True),
        ("/w/.loopd/config.toml", True),
        ("/w/src/.vscode.py", False),
        ("/elsewhere/app.py", True),  # outside every root
    ],
)
def test_always_ask_globs_match_the_canonical_path(path: str, asks: bool) -> None:
    assert ReviewOptions().always_asks(path, ("/w",)) is asks


def _negotiated(loopd: Any) -> ClientOptions:
    caps = types.ClientCapabilities(experimental={"loopd": loopd})
    return ClientOptions.negotiate(types.InitializeParams(capabilities=caps))


def test_review_is_on_only_when_asked_by_name() -> None:
    assert _negotiated(True).review is None  # `true` predates review: no surprise requests
    assert _negotiated({"review": False}).review is None
    assert _negotiated({"review": True}).review == ReviewOptions(ALWAYS_ASK)
    chosen = _negotiated({"review": {"alwaysAsk": ["secrets/**", 3, " "]}}).review
    assert chosen == ReviewOptions((*ALWAYS_ASK, "secrets/**"))  # added, never instead
    assert _negotiated({"review": {"alwaysAsk": []}}).review == ReviewOptions(ALWAYS_ASK)
    flags = _negotiated({"sessionUpdate": 1, "requestPermission": True, "review": True})
    assert flags.session_update and flags.request_permission and not flags.ask_user


def test_lines_break_at_newlines_only_as_the_editor_side_splits_them() -> None:
    proposal = Proposal.of("a\rb\u2028c\n", "a\rb\u2028C\n")
    assert len(proposal.hunks) == 1 and proposal.hunks[0].old_start == 0
    assert proposal.apply({0}) == "a\rb\u2028C\n"
