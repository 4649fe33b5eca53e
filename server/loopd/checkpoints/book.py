"""The checkpoint rows, in the session store (so they live and die with sessions,
and survive restarts of loopd and of the daemon alike).

`checkpoints`: one row per checkpoint of a session, in order (`seq`): its kind
(`prompt`: before that prompt ran; `after`: as the turn, or a restore, left the
workspace; `redo`: the state a restore replaced), the prompt number it belongs to and
the prompt's first line, each root's manifest digest, the conversation's digest (None
for a runtime whose history is not loopd's) and what was left out. `checkpoint_roots`:
the newest manifest of each root, whichever session took it, for the next scan to
reuse. `checkpoint_usage`: the bytes the blob folder holds, against its bound.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from loopd.store.sqlite import SqliteStore

Kind = Literal["prompt", "after", "redo"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    prompt INTEGER NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    roots TEXT NOT NULL,
    conversation TEXT,
    left_out TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS checkpoint_roots (root TEXT PRIMARY KEY, manifest TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint_usage (
    id INTEGER PRIMARY KEY CHECK (id = 0), bytes INTEGER NOT NULL
);
"""
_COLUMNS = "seq, kind, prompt, label, created_at, roots, conversation, left_out"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    seq: int
    kind: Kind
    prompt: int  # the prompt it was taken before (prompt) or after (after, redo)
    label: str
    created_at: str
    roots: Mapping[str, str]  # canonical root -> manifest digest
    conversation: str | None
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CheckpointBook:
    store: SqliteStore

    def __post_init__(self) -> None:
        with self.store.transaction() as db:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)

    def add(self, session_id: str, point: Checkpoint, added: int) -> Checkpoint:
        """Append `point` (its `seq` is given here) and count `added` blob bytes."""
        with self.store.transaction() as db:
            (seq,) = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            db.execute(
                f"INSERT INTO checkpoints (session_id, {_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    session_id, seq, point.kind, point.prompt, point.label, point.created_at,
                    json.dumps(dict(point.roots)), point.conversation,
                    json.dumps(list(point.left_out)),
                ),
            )  # fmt: skip
            for root, digest in point.roots.items():
                db.execute(
                    "INSERT INTO checkpoint_roots (root, manifest) VALUES (?, ?) "
                    "ON CONFLICT(root) DO UPDATE SET manifest = excluded.manifest",
                    (root, digest),
                )
            self._count(db, added)
        return dataclasses.replace(point, seq=int(seq))

    def drop(self, session_id: str, seq: int) -> None:
        """Forget one checkpoint (a redo point whose restore was refused)."""
        with self.store.transaction() as db:
            db.execute(
                "DELETE FROM checkpoints WHERE session_id = ? AND seq = ?", (session_id, seq)
            )

    def count(self, added: int) -> None:
        """Count blob bytes written outside a checkpoint (one that was abandoned)."""
        with self.store.transaction() as db:
            self._count(db, added)

    @staticmethod
    def _count(db: sqlite3.Connection, added: int) -> None:
        if added:
            db.execute(
                "INSERT INTO checkpoint_usage (id, bytes) VALUES (0, ?) "
                "ON CONFLICT(id) DO UPDATE SET bytes = bytes + excluded.bytes",
                (added,),
            )

    def used(self) -> int:
        with self.store.transaction() as db:
            row = db.execute("SELECT bytes FROM checkpoint_usage WHERE id = 0").fetchone()
        return int(row[0]) if row else 0

    def set_used(self, held: int) -> None:
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO checkpoint_usage (id, bytes) VALUES (0, ?) "
                "ON CONFLICT(id) DO UPDATE SET bytes = excluded.bytes",
                (held,),
            )

    def references(self) -> set[str]:
        """Every manifest and conversation digest a checkpoint row (of any session)
        names. A root's newest manifest that no row names any more is forgotten."""
        found: set[str] = set()
        with self.store.transaction() as db:
            for roots, conversation in db.execute("SELECT roots, conversation FROM checkpoints"):
                found |= {str(d) for d in json.loads(str(roots)).values()}
                if conversation is not None:
                    found.add(str(conversation))
            for (digest,) in db.execute("SELECT manifest FROM checkpoint_roots").fetchall():
                if digest not in found:
                    db.execute("DELETE FROM checkpoint_roots WHERE manifest = ?", (digest,))
        return found

    def newest_manifest(self, root: str) -> str | None:
        with self.store.transaction() as db:
            row = db.execute(
                "SELECT manifest FROM checkpoint_roots WHERE root = ?", (root,)
            ).fetchone()
        return None if row is None else str(row[0])

    def of(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        with self.store.transaction() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [_point(row) for row in rows]

    def copy(self, source_id: str, target_id: str, upto: int) -> None:
        """A fork's checkpoints: the source's, up to and with `upto` (a seq)."""
        with self.store.transaction() as db:
            db.execute(
                f"INSERT INTO checkpoints (session_id, {_COLUMNS}) SELECT ?, {_COLUMNS} "
                "FROM checkpoints WHERE session_id = ? AND seq <= ?",
                (target_id, source_id, upto),
            )


def _point(row: tuple[object, ...]) -> Checkpoint:
    seq, kind, prompt, label, created, roots, conversation, left_out = row
    return Checkpoint(
        seq=int(str(seq)),
        kind=_kind(kind),
        prompt=int(str(prompt)),
        label=str(label),
        created_at=str(created),
        roots=json.loads(str(roots)),
        conversation=None if conversation is None else str(conversation),
        left_out=tuple(json.loads(str(left_out))),
    )


def _kind(value: object) -> Kind:
    match value:
        case "prompt" | "after" | "redo":
            return value
        case _:
            return "after"
