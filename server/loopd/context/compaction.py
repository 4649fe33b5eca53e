"""When to compact, what to keep, and how to cut what is summarised into requests
that fit. Pure: the engine's `loopd.engine.compactor` makes the model calls.

After the seed's `CompactionPolicy`: occupancy is measured in basis points of the
effective window; the engine compacts when it reaches `compact_at` and not again
until it has dropped below `rearm_below`, so a summary that leaves the context just
under the line does not trigger a compaction at every step. The kept suffix is the
newest complete user-anchored segments, by count and by token estimate; the newest
segment is kept even when it alone is over the token target, and a cut never falls
between a tool call and its result. Only when the newest segment cannot fit beside
the summary does the cut move inside it, to the latest step boundary that fits; when
even the last step cannot fit, the compaction is rejected with the reason.

Two divergences from the seed, on purpose: the kept-token target and the summary
budget are shares of the window, not token counts, because the window is learned at
run time and one count cannot suit both an 8k local model and a 1M one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from loopd.context.tokens import estimate_text
from loopd.context.view import ContextView, safe_cuts, segment_starts
from loopd.protocol.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart

BP = 10_000
MIN_OUTPUT = 256  # an answer needs some room, whatever the window


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """- `automatic`: compact when occupancy reaches `compact_at` (bp of the window).
    - `rearm_below`: after a compaction, the next waits until occupancy fell below it.
    - `notice_at`: one budget notice, to the model and the person, when occupancy
      reaches it (0: none). Re-armed by a compaction.
    - `keep_recent_segments`, `keep_recent_bp`: the newest segments kept verbatim,
      shrunk (to one at least) while they are over `keep_recent_bp` of the window.
    - `summary_bp`, `max_summary_tokens`: the summary's budget.
    - `safety_bp`: room left unused for the estimate's error.
    - `output_bp`: the most of the window reserved for the answer (`reserve`): a
      request asks for no more output than that, and is judged with it."""

    automatic: bool = True
    compact_at: int = 8_000
    rearm_below: int = 6_000
    notice_at: int = 7_000
    keep_recent_segments: int = 2
    keep_recent_bp: int = 2_500
    summary_bp: int = 1_000
    max_summary_tokens: int = 4_096
    safety_bp: int = 500
    output_bp: int = 2_500

    def __post_init__(self) -> None:
        names = ("compact_at", "rearm_below", "notice_at", "keep_recent_bp", "summary_bp")
        for name in (*names, "output_bp"):
            value = getattr(self, name)
            if not 0 <= value <= BP:
                raise ValueError(f"{name} must be in 0..{BP} basis points, not {value}")
        if self.rearm_below > self.compact_at:
            raise ValueError("rearm_below must not be above compact_at")
        if self.keep_recent_segments < 0 or self.max_summary_tokens < 1:
            raise ValueError("keep_recent_segments >= 0 and max_summary_tokens >= 1")

    def summary_budget(self, window: int) -> int:
        return max(256, min(self.max_summary_tokens, window * self.summary_bp // BP))

    def input_limit(self, window: int) -> int:
        """The most a request's prompt may hold: the window less the safety share."""
        return window - window * self.safety_bp // BP

    def reserve(self, window: int, max_tokens: int) -> int:
        """The output a request asks for: `max_tokens`, but no more than `output_bp`
        of the window (a fixed 8192 against a 10k window left a 2k prompt no room),
        and never below `MIN_OUTPUT`."""
        return max(MIN_OUTPUT, min(max_tokens, window * self.output_bp // BP))


def occupancy_bp(tokens: int, window: int) -> int:
    return tokens * BP // max(1, window)


@dataclass(frozen=True, slots=True)
class Cut:
    """Summarise `history[view.start:index]`; keep the rest."""

    index: int


@dataclass(frozen=True, slots=True)
class Rejected:
    reason: str


def plan_cut(
    view: ContextView,
    policy: CompactionPolicy,
    window: int,
    fixed: int,
    keep_segments: int | None = None,
) -> Cut | Rejected:
    """Where to cut the view's tail. `fixed` is what every request carries besides
    the messages (system prompt, tool specs), already calibrated; `keep_segments`
    overrides the policy's count (`/compact` keeps none)."""
    history, start = view.history, view.start
    end = len(history)
    keep = policy.keep_recent_segments if keep_segments is None else keep_segments
    room = policy.input_limit(window) - fixed - 2 * policy.summary_budget(window)
    target = window * policy.keep_recent_bp // BP
    suffix = [0] * (end - start + 1)
    for i in range(end - 1, start - 1, -1):
        suffix[i - start] = suffix[i - start + 1] + view.tokens(i)

    def kept(index: int) -> int:
        return view.scaled(suffix[index - start])

    starts = segment_starts(history, start)
    cut = end if keep == 0 or not starts else starts[max(0, len(starts) - keep)]
    later = [s for s in starts if s > cut]
    while later and kept(cut) > target:
        cut = later.pop(0)
    if kept(cut) > room:
        boundaries = safe_cuts(history, max(cut, start + 1))
        fitting = [c for c in boundaries if kept(c) <= room]
        if not fitting:
            newest = kept(boundaries[-1]) if boundaries else kept(start)
            return Rejected(_too_large(newest, window, room))
        cut = fitting[0]
    if cut <= start:
        return Rejected("there is nothing older than the part that must be kept")
    return Cut(cut)


def _too_large(newest: int, window: int, room: int) -> str:
    return (
        f"the newest step alone is about {newest:,} tokens, and only {max(0, room):,} of "
        f"the {window:,}-token window are left beside the summary"
    )


# -- what the summariser reads --------------------------------------------------------

RESULT_CHARS = 4_000
INPUT_CHARS = 1_000


def transcript(messages: Sequence[Message]) -> list[str]:
    """`messages` as plain text entries, one per message, for the summariser: tool
    calls and results inline (results cut to their head and tail), thinking left
    out. Plain text, so a piece can end anywhere without breaking a call/result pair
    the provider would reject."""
    return [entry for m in messages if (entry := _entry(m))]


def _entry(message: Message) -> str:
    lines: list[str] = []
    who = "User" if message.role == "user" else "Assistant"
    for part in message.parts:
        match part:
            case TextPart(text) if text.strip():
                lines.append(f"{who}: {text.strip()}")
            case ToolUsePart(_, name, input_):
                raw = json.dumps(dict(input_), ensure_ascii=False, default=str)
                lines.append(f"Assistant called {name} {_clip(raw, INPUT_CHARS)}")
            case ToolResultPart(_, content, is_error):
                label = "Tool error" if is_error else "Tool result"
                lines.append(f"{label}: {_clip(content, RESULT_CHARS)}")
            case TextPart() | ThinkingPart():
                pass
            case _:
                lines.append(f"{who}: [an image]")
    return "\n".join(lines)


def pieces(entries: Sequence[str], room: int) -> list[str]:
    """`entries` joined into pieces of at most `room` estimated tokens each, in
    order; an entry too big for one piece is cut to its head and tail."""
    out: list[str] = []
    current: list[str] = []
    used = 0
    for entry in entries:
        cost = estimate_text(entry) + 1
        if cost > room:
            entry = _clip(entry, max(64, room * 4 - 64))
            cost = estimate_text(entry) + 1
        if current and used + cost > room:
            out.append("\n\n".join(current))
            current, used = [], 0
        current.append(entry)
        used += cost
    if current:
        out.append("\n\n".join(current))
    return out


def _clip(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    half = chars // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"
