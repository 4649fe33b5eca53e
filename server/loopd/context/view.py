"""The model's view of a history: an optional summary, then the history from a cut.

The history itself is never rewritten: it is what the person's transcript and the
store hold, whole. A compaction moves `start` forward and replaces what lies before
it with one summary; the request is the summary followed by `history[start:]`.

Each message is estimated once, when it is appended, and the view keeps the running
sum of its tail, so deciding whether to compact costs the same at turn 400 as at
turn 10. The provider's reported prompt size calibrates the estimate (`calibrate`):
the estimate is deterministic, the provider's count is the truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from loopd.context.tokens import estimate_message, estimate_text
from loopd.protocol.messages import Message, TextPart

SUMMARY_OPEN = "<summary>\nThe earlier part of this conversation was summarised to free room:\n"
SUMMARY_CLOSE = "\n</summary>"
ACK = "Understood. I continue from that summary."

MIN_SCALE, MAX_SCALE = 0.5, 4.0


def summary_message(summary: str) -> Message:
    return Message("user", (TextPart(f"{SUMMARY_OPEN}{summary}{SUMMARY_CLOSE}"),))


@dataclass(slots=True)
class ContextView:
    """`history` is the engine's own list (appended to, never rewritten); call
    `appended` after each append so the estimate follows."""

    history: list[Message]
    start: int = 0
    summary: str = ""
    scale: float = 1.0
    _tokens: list[int] = field(default_factory=list)
    _tail: int = 0
    _prefix: tuple[Message, ...] = ()
    _prefix_tokens: int = 0

    def __post_init__(self) -> None:
        self.start = min(self.start, len(self.history))
        self._tokens = [0] * self.start
        self._tokens += [estimate_message(m) for m in self.history[self.start :]]
        self._tail = sum(self._tokens[self.start :])
        self._set_summary(self.summary)

    def appended(self) -> None:
        """Account for the message just appended to `history`."""
        while len(self._tokens) < len(self.history):
            tokens = estimate_message(self.history[len(self._tokens)])
            self._tokens.append(tokens)
            self._tail += tokens

    def messages(self) -> tuple[Message, ...]:
        """What the model is sent. The summary objects are reused from request to
        request, so a provider's per-message encoding cache keeps them."""
        tail = self.history[self.start :]
        if not self._prefix:
            return tuple(tail)
        summary, ack = self._prefix
        if tail and tail[0].role == "assistant":
            return (summary, *tail)
        return (summary, ack, *tail)

    @property
    def estimate(self) -> int:
        """The estimated tokens of the messages, before calibration."""
        return self._prefix_tokens + self._tail

    def tokens(self, index: int) -> int:
        return self._tokens[index]

    def compact(self, cut: int, summary: str) -> None:
        """Everything before `cut` is now represented by `summary`."""
        if not self.start <= cut <= len(self.history):
            raise ValueError(f"cut {cut} outside {self.start}..{len(self.history)}")
        self._tail -= sum(self._tokens[self.start : cut])
        self.start = cut
        self._set_summary(summary)

    def calibrate(self, estimated: int, reported: int) -> None:
        """Learn how the provider's count relates to the estimate, from a request of
        `estimated` tokens the provider said cost `reported`."""
        if estimated > 0 and reported > 0:
            self.scale = min(MAX_SCALE, max(MIN_SCALE, reported / estimated))

    def scaled(self, estimate: int) -> int:
        return int(estimate * self.scale) + 1

    def _set_summary(self, summary: str) -> None:
        self.summary = summary
        if not summary:
            self._prefix, self._prefix_tokens = (), 0
            return
        first, ack = summary_message(summary), Message("assistant", (TextPart(ACK),))
        self._prefix = (first, ack)
        self._prefix_tokens = estimate_message(first) + estimate_text(ACK) + 4


def segment_starts(history: Sequence[Message], start: int) -> list[int]:
    """Where the user-anchored segments of `history[start:]` begin: a user message
    that is not tool results. Cutting there never separates a call from its result."""
    return [
        i
        for i in range(start, len(history))
        if history[i].role == "user" and not history[i].tool_results
    ]


def safe_cuts(history: Sequence[Message], start: int) -> list[int]:
    """Every boundary in `history[start:]` that leaves no tool call without its result
    on either side: before an assistant message, or before a user message that holds
    no tool results."""
    return [
        i
        for i in range(start, len(history))
        if history[i].role == "assistant" or not history[i].tool_results
    ]
