"""How a turn ends, in ACP's closed set of stop reasons, and what the session
commands that end without a turn report (`/undo`, `/compact`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from loopd.protocol.model import Usage
from loopd.protocol.verification import Verification

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a turn ended. `context_tokens` is what the assembled context costs now (the
    last request's whole prompt), not a sum over rounds. `error` is the visible
    message when the turn ended because something failed. `verification` is the
    turn's seal (None where no seal is kept: foreign runtimes, typed commands)."""

    turn_id: str
    stop_reason: StopReason
    iterations: int = 0
    usage: Usage = field(default_factory=Usage)
    context_tokens: int = 0
    error: str | None = None
    verification: Verification | None = None


@dataclass(frozen=True, slots=True)
class UndoReport:
    """What putting back the last turn's file changes did. `refused` pairs each path
    left alone with the reason (it changed since, it could not be read before...)."""

    restored: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()

    @property
    def summary(self) -> str:
        if not self.restored and not self.refused:
            return "Nothing to undo: the last turn changed no files."
        lines = [f"Restored {p}" for p in self.restored]
        lines += [f"Left {p} as it is: {why}" for p, why in self.refused]
        return "\n".join(lines)


def compacted_note(summary: str, refused: str = "") -> str:
    """What the person reads after `/compact`: the summary, or why there was none."""
    if not summary:
        return f"Nothing compacted: {refused}." if refused else "Nothing to compact yet."
    return f"Compacted the context. The model continues from this summary:\n\n{summary}"
