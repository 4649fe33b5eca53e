"""What a session's file tools changed, turn by turn, so the person can put the last
turn back (seed 000 `Undo`: not a tool, an operation the person asks for).

Each turn keeps, per path, the text before its first change and after its last. Undo
restores the newest turn that changed anything, path by path, and only where the file
is still exactly what the turn left: a file edited since (by the person, a command or
another tool) is left alone and reported, never overwritten. A file the turn created
is removed. Changes made by shell commands are not tracked; the report says so by
omission, and the person's own editor undo still has them. What undo puts back is a
write like any other: it moves the ledger, so a check of done made before it is stale.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

from loopd.protocol.turns import UndoReport
from loopd.tools.access import FileAccess


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    before: str | None  # None: the file did not exist
    after: str
    known: bool = True  # False: the old text could not be read, so it cannot come back


@dataclass(slots=True)
class WriteLedger:
    """How many writes the session has made, ever increasing (seed 000 `WriteSeq`),
    and the paths the file tools wrote this turn. A count, not a set: rewriting a
    file after a check is the exact case a stale seal catches. Shell commands that
    may write count too, without a path (what they touched is unknown)."""

    seq: int = 0
    turn_paths: set[str] = field(default_factory=set)

    def note(self, path: str | None = None) -> None:
        self.seq += 1
        if path is not None:
            self.turn_paths.add(path)


@dataclass(slots=True)
class ChangeLog:
    turns: list[dict[str, Change]] = field(default_factory=list)
    ledger: WriteLedger = field(default_factory=WriteLedger)

    def begin_turn(self) -> None:
        self.ledger.turn_paths = set()
        if not self.turns or self.turns[-1]:
            self.turns.append({})

    def record(self, path: str, before: str | None, after: str, known: bool = True) -> None:
        self.ledger.note(path)
        if not self.turns:
            self.turns.append({})
        first = self.turns[-1].get(path)
        if first is not None:
            before, known = first.before, first.known
        self.turns[-1][path] = Change(path, before, after, known)

    async def undo(self, files: FileAccess) -> UndoReport:
        while self.turns and not self.turns[-1]:
            self.turns.pop()
        if not self.turns:
            return UndoReport()
        restored: list[str] = []
        refused: list[tuple[str, str]] = []
        for change in self.turns.pop().values():
            why = await _put_back(change, files)
            if why is None:
                self.ledger.note(change.path)
                restored.append(change.path)
            else:
                refused.append((change.path, why))
        return UndoReport(tuple(restored), tuple(refused))


async def _put_back(change: Change, files: FileAccess) -> str | None:
    """Restore one file; the reason it was left alone, or None when restored."""
    if not change.known:
        return "its earlier content could not be read, so it cannot be restored"
    try:
        current: str | None = await files.read_text(change.path)
    except FileNotFoundError:
        current = None
    except OSError as err:
        return f"it cannot be read now ({err.strerror or err})"
    if current != change.after:
        return "it changed after that turn"
    try:
        if change.before is None:
            await asyncio.to_thread(os.remove, change.path)
        else:
            reviewed = await files.write_text(change.path, change.before)
            if reviewed is not None and reviewed.written != change.before:
                return "the review did not accept all of it"
    except OSError as err:
        return f"it could not be written ({err.strerror or err})"
    return None
