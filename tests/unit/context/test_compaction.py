"""Where compaction cuts: the newest complete segments kept, a tool call never apart
from its result, a cut inside the newest segment only when it cannot fit, and a
rejection with its reason when even the last step cannot."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loopd.context.compaction import CompactionPolicy, Cut, Rejected, pieces, plan_cut, transcript
from loopd.context.tokens import estimate_text
from loopd.context.view import ContextView
from loopd.protocol.messages import Message, TextPart, ToolResultPart, ToolUsePart

POLICY = CompactionPolicy()


def user(text: str) -> Message:
    return Message("user", (TextPart(text),))


def said(text: str) -> Message:
    return Message("assistant", (TextPart(text),))


def step(n: int, output: str = "ok") -> list[Message]:
    return [
        Message("assistant", (ToolUsePart(f"t{n}", "read", {"path": f"{n}.py"}),)),
        Message("user", (ToolResultPart(f"t{n}", output),)),
    ]


def turn(n: int, words: int = 50) -> list[Message]:
    return [user(f"question {n}"), *step(n), said("answer " * words)]


def test_the_newest_segments_are_kept_and_the_rest_summarised() -> None:
    history = [m for n in range(6) for m in turn(n)]
    view = ContextView(history)
    plan = plan_cut(view, POLICY, 200_000, 100)
    assert plan == Cut(16)  # turns 4 and 5 kept
    assert history[16] == user("question 4")


def test_segments_over_the_token_target_are_dropped_but_the_newest_is_kept() -> None:
    history = [m for n in range(4) for m in turn(n, words=2_000)]
    plan = plan_cut(ContextView(history), POLICY, 20_000, 100)
    assert plan == Cut(12)  # only turn 3, though alone it is over a quarter of the window


def test_a_segment_that_cannot_fit_is_cut_inside_at_a_step_boundary() -> None:
    long_turn = [user("do it all"), *[m for n in range(30) for m in step(n, "x" * 2_000)]]
    view = ContextView([*turn(0), *long_turn])
    plan = plan_cut(view, POLICY, 20_000, 100)
    assert isinstance(plan, Cut)
    kept = view.history[plan.index :]
    assert plan.index > 4 and kept[0].role == "assistant" and kept[0].tool_uses


def test_a_last_step_larger_than_the_window_allows_is_rejected_with_the_reason() -> None:
    history = [*turn(0), user("read the big one"), *step(1, "y" * 80_000)]
    plan = plan_cut(ContextView(history), POLICY, 20_000, 100)
    assert isinstance(plan, Rejected)
    assert "the newest step alone is about 20," in plan.reason
    assert "20,000-token window" in plan.reason


def test_nothing_older_than_what_must_be_kept_is_a_rejection() -> None:
    plan = plan_cut(ContextView(turn(0)), POLICY, 200_000, 100)
    assert plan == Rejected("there is nothing older than the part that must be kept")


def test_compact_now_keeps_nothing() -> None:
    history = turn(0)
    assert plan_cut(ContextView(history), POLICY, 200_000, 100, keep_segments=0) == Cut(4)


_TURNS = st.lists(
    st.tuples(st.integers(0, 4), st.integers(1, 3_000), st.integers(1, 3_000)), min_size=1
)


@given(_TURNS, st.integers(2_000, 60_000), st.integers(0, 3))
def test_a_cut_never_separates_a_call_from_its_result(
    shape: list[tuple[int, int, int]], window: int, keep: int
) -> None:
    history: list[Message] = []
    for n, (steps, result, reply) in enumerate(shape):
        history.append(user(f"q{n}"))
        for s in range(steps):
            history += step(n * 10 + s, "r" * result)
        history.append(said("a" * reply))
    view = ContextView(history)
    plan = plan_cut(view, POLICY, window, 50, keep_segments=keep)
    if isinstance(plan, Cut):
        assert not (plan.index < len(history) and history[plan.index].tool_results)
        assert plan.index > 0


def test_pieces_fit_the_room_and_keep_the_order() -> None:
    history = [m for n in range(40) for m in turn(n, words=300)]
    entries = transcript(history)
    chunks = pieces(entries, room=1_000)
    assert len(chunks) > 1
    assert all(estimate_text(c) <= 1_000 for c in chunks)
    joined = "\n\n".join(chunks)
    assert joined.index("question 3") < joined.index("question 30")


def test_an_entry_bigger_than_a_piece_is_cut_to_its_ends() -> None:
    (chunk,) = pieces(["head " + "x" * 50_000 + " tail"], room=500)
    assert chunk.startswith("head") and chunk.endswith("tail")
    assert estimate_text(chunk) <= 500
