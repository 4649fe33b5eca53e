"""Golden JSON of the `loopd/*` builders in `loopd.lsp.wire` and
`loopd.sessions.rewind_wire`, each checked against its shape in
`loopd.protocol.wire.shapes`."""

from __future__ import annotations

from loopd.checkpoints.book import Checkpoint
from loopd.checkpoints.service import Restored
from loopd.lsp.wire import opened_to_wire, page_to_wire, permission_params, view_to_wire
from loopd.protocol.approvals import ApprovalRequest
from loopd.protocol.events import Command, ConfigChoice, ConfigOption, DiffContent, Location
from loopd.protocol.wire import shapes
from loopd.sessions.options import SessionView
from loopd.sessions.rewind_wire import checkpoints_to_wire, restored_to_wire
from loopd.store.sqlite import SessionPage, SessionRecord
from tests.unit.golden import assert_golden

VIEW = SessionView(
    "s1",
    (ConfigOption("model", "Model", "model", "m1", (ConfigChoice("m1", "M1", "fast"),)),),
    (Command("done", "Check the definition of done", "criteria"),),
)


def _point(seq: int, kind: str, prompt: int, conversation: str | None) -> Checkpoint:
    return Checkpoint(
        seq, kind, prompt, f"prompt {prompt}", "2026-01-01T00:00:00Z", {}, conversation
    )  # type: ignore[arg-type]


def test_the_session_builders_render_their_golden_results() -> None:
    page = SessionPage(
        (
            SessionRecord("s1", "/w", title="First", updated_at="2026-01-02T00:00:00Z"),
            SessionRecord("s2", "/w"),
        ),
        next_cursor="c2",
    )
    request = ApprovalRequest(
        "s1",
        "c1",
        "write",
        "Write /w/a",
        "edit",
        {"path": "/w/a"},
        content=(DiffContent("/w/a", "x", "y"),),
        locations=(Location("/w/a", 1),),
    )
    assert_golden(
        __file__,
        "session_results",
        {
            "new": (view_to_wire(VIEW), shapes.NewSessionResult),
            "load": (opened_to_wire(VIEW), shapes.LoadSessionResult),
            "list": (page_to_wire(page), shapes.ListResult),
            "list_last": (page_to_wire(SessionPage((), None)), shapes.ListResult),
            "request_permission": (permission_params(request), shapes.PermissionParams),
        },
    )


def test_the_checkpoint_builders_render_their_golden_results() -> None:
    points = [
        _point(1, "prompt", 1, "conv1"),
        _point(2, "prompt", 2, None),
        _point(3, "redo", 2, None),
    ]
    restored = Restored(points[0], "both", ("a.py",), ("b.py",), (("c.py", "permission denied"),))
    assert_golden(
        __file__,
        "checkpoint_results",
        {
            "checkpoints": (checkpoints_to_wire(points), shapes.CheckpointsResult),
            "restored": (restored_to_wire(restored), shapes.RestoreResult),
        },
    )
