"""A proposed file change as hunks a person accepts or rejects one by one. Pure.

A hunk is one run of changed lines (difflib's non-equal opcodes over whole lines,
split at line feeds, endings kept), numbered from 0 in file order. Lines are
0-based, as LSP positions are; `old_lines` lines of the old text from `old_start`
become `new_lines` lines of the proposed text from `new_start`. Applying a choice takes
each hunk's new lines when it is accepted and its old lines otherwise, so the text
that lands is the old text plus exactly the accepted hunks.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

MAX_SHOWN_LINES = 12  # of each side of a rejected hunk, in the model's note


@dataclass(frozen=True, slots=True)
class Hunk:
    index: int
    old_start: int
    old_lines: tuple[str, ...]
    new_start: int
    new_lines: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "oldStart": self.old_start,
            "oldLines": len(self.old_lines),
            "newStart": self.new_start,
            "newLines": len(self.new_lines),
            "oldText": "".join(self.old_lines),
            "newText": "".join(self.new_lines),
        }


@dataclass(frozen=True, slots=True)
class Proposal:
    """`old` (None: the file is new) changed into `new`, as hunks."""

    old: str | None
    new: str
    hunks: tuple[Hunk, ...]

    @classmethod
    def of(cls, old: str | None, new: str) -> Proposal:
        before, after = lines(old), lines(new)
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        hunks = tuple(
            Hunk(n, i1, tuple(before[i1:i2]), j1, tuple(after[j1:j2]))
            for n, (_, i1, i2, j1, j2) in enumerate(
                op for op in matcher.get_opcodes() if op[0] != "equal"
            )
        )
        return cls(old, new, hunks)

    def apply(self, accepted: Collection[int]) -> str:
        """The old text with exactly the `accepted` hunks (by index) applied."""
        before = lines(self.old)
        out: list[str] = []
        at = 0
        for hunk in self.hunks:
            out.extend(before[at : hunk.old_start])
            out.extend(hunk.new_lines if hunk.index in accepted else hunk.old_lines)
            at = hunk.old_start + len(hunk.old_lines)
        out.extend(before[at:])
        return "".join(out)

    def note(self, accepted: Collection[int], shown: str) -> str:
        """What the model is told of a review that rejected something ("" if none)."""
        rejected = [h for h in self.hunks if h.index not in accepted]
        if not rejected:
            return ""
        total = len(self.hunks)
        if len(rejected) == total:
            head = f"The person rejected this change to {shown}: the file is unchanged."
        else:
            kept = total - len(rejected)
            head = (
                f"The person reviewed this change to {shown} and rejected {len(rejected)} of "
                f"its {total} hunks; the file has only the {kept} accepted."
            )
        parts = [head, *(_describe(h) for h in rejected)]
        parts.append("Do not make a rejected change again unless the person asks for it.")
        return "\n".join(parts)


def lines(text: str | None) -> list[str]:
    """`text` as lines with their endings, split at line feeds only, as the editor's
    side splits them (a lone carriage return or U+2028 is no line break here)."""
    return _LINE.findall(text or "")


_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def _describe(hunk: Hunk) -> str:
    where = f"old lines {hunk.old_start + 1}-{hunk.old_start + len(hunk.old_lines)}"
    if not hunk.old_lines:
        where = f"after old line {hunk.old_start}"
    body = [*_side("-", hunk.old_lines), *_side("+", hunk.new_lines)]
    return "\n".join([f"Rejected hunk {hunk.index + 1} ({where}):", *body])


def _side(sign: str, lines: Sequence[str]) -> list[str]:
    shown = [f"{sign}{line.rstrip(chr(10)).rstrip(chr(13))}" for line in lines[:MAX_SHOWN_LINES]]
    if len(lines) > MAX_SHOWN_LINES:
        shown.append(f"{sign}... ({len(lines) - MAX_SHOWN_LINES} more lines)")
    return shown
