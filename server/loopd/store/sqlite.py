"""SqliteStore: every session of the user, shared by every loopd process.

One SQLite file (WAL) under the data dir. Five tables: `sessions` (one row each:
roots, title, runtime identity and resume state, config values, remembered
approvals), `events` (the journal of what clients were shown, as ACP `session/update`
JSON, replayed on load), `messages` (the model-facing history, whole: compaction
never deletes from it), `contexts` (per session: the system prompt frozen when it
started, the instruction files as last told to the model, where the model's view
of the history starts, with the summary of what lies before, and what the session
has spent, with the loop guard of a turn still running) and `model_windows`
(context windows learned from overflow errors, so every later session knows them).
Each append is its own committed transaction, written before the event is shown, so
a process killed mid-turn loses nothing already on screen. WAL with
synchronous=NORMAL makes a commit durable against a process crash without an fsync
per chunk.

The tables and their migrations are `loopd.store.schema`'s.

Everything is written as standard JSON (`dumps_safe`: a non-finite number becomes a
string, never a bare `NaN`), and reading is forgiving: a row that does not decode
(written by an older loopd, or damaged) is skipped with a warning, and numbers that
are not finite are repaired on the way out, so a session always loads.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from loopd.protocol.jsonvalues import dumps_safe, finite, loads_finite
from loopd.protocol.messages import Message, message_from_json, message_to_json
from loopd.store.schema import MIGRATIONS, SCHEMA

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    cwd: str
    additional_dirs: tuple[str, ...] = ()
    title: str | None = None
    created_at: str = ""
    updated_at: str = ""
    runtime: Mapping[str, Any] = field(default_factory=dict)
    runtime_state: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, str] = field(default_factory=dict)
    approvals: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ContextRecord:
    """A session's model context: `system` is None until the session first froze
    it; `instructions` maps each instruction file to the text the model last saw."""

    system: str | None = None
    instructions: Mapping[str, str] = field(default_factory=dict)
    start: int = 0
    summary: str = ""
    spending: Mapping[str, Any] | None = None  # `Spending.to_json`; None: never kept


@dataclass(frozen=True, slots=True)
class SessionPage:
    sessions: tuple[SessionRecord, ...]
    next_cursor: str | None


_COLUMNS = (
    "id, cwd, additional_dirs, title, created_at, updated_at,"
    " runtime, runtime_state, config, approvals"
)


class SqliteStore:
    """Thread-safe: one connection guarded by a lock (calls are short)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        with self._tx() as db:
            done = int(db.execute("PRAGMA user_version").fetchone()[0])
            for migration in MIGRATIONS[done:]:
                db.execute(migration)
            if done < len(MIGRATIONS):
                db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction (`BEGIN IMMEDIATE`: it waits for other processes'
        writes, up to the busy timeout), for modules that keep their own tables
        here (`loopd.store.lease`)."""
        return self._tx()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- sessions ------------------------------------------------------------------------

    def create(self, record: SessionRecord) -> None:
        with self._tx() as db:
            db.execute(
                f"INSERT INTO sessions ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                _row_of(record),
            )

    def get(self, session_id: str) -> SessionRecord | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return None if row is None else _record_of(row)

    def update(self, session_id: str, **fields: Any) -> None:
        """Set columns of a session (`title`, `updated_at`, `runtime`, `runtime_state`,
        `config`, `approvals`); mappings are stored as JSON."""
        allowed = {"title", "updated_at", "runtime", "runtime_state", "config", "approvals"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update {sorted(unknown)}")
        sets = ", ".join(f"{k} = ?" for k in fields)
        values = [dumps_safe(v) if isinstance(v, Mapping) else v for v in fields.values()]
        with self._tx() as db:
            db.execute(f"UPDATE sessions SET {sets} WHERE id = ?", (*values, session_id))

    def fork(self, source_id: str, record: SessionRecord) -> None:
        """Create `record` holding a copy of `source_id`'s journal and model context
        as they are now, in one transaction: the two continue independently."""
        with self._tx() as db:
            db.execute(
                f"INSERT INTO sessions ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                _row_of(record),
            )
            for table, column in (("events", "wire"), ("messages", "body")):
                db.execute(
                    f"INSERT INTO {table} (session_id, seq, {column}) "
                    f"SELECT ?, seq, {column} FROM {table} WHERE session_id = ?",
                    (record.id, source_id),
                )
            # The compacted view goes along; the frozen prompt and the instruction
            # files only when the fork works in the same folder (else it freezes its own).
            db.execute(
                "INSERT INTO contexts (session_id, system, instructions, start, summary) "
                "SELECT ?, CASE WHEN s.cwd = ? THEN c.system END,"
                " CASE WHEN s.cwd = ? THEN c.instructions ELSE '{}' END, c.start, c.summary "
                "FROM contexts c JOIN sessions s ON s.id = c.session_id WHERE c.session_id = ?",
                (record.id, record.cwd, record.cwd, source_id),
            )

    def delete(self, session_id: str) -> bool:
        """Forget a session: its rows, and the full command outputs kept for it."""
        with self._tx() as db:
            found = db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0
        shutil.rmtree(outputs_dir(self.path.parent, session_id), ignore_errors=True)
        return found

    def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> SessionPage:
        """Newest first. The cursor is opaque to clients: "<updated_at>|<id>" of the last
        row of the previous page, so paging is stable while sessions are added."""
        where: list[str] = []
        args: list[str] = []
        if cwd is not None:
            where.append("cwd = ?")
            args.append(cwd)
        if cursor:
            at, _, sid = cursor.partition("|")
            where.append("(updated_at < ? OR (updated_at = ? AND id < ?))")
            args += [at, at, sid]
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        sql = f"SELECT {_COLUMNS} FROM sessions {clause} ORDER BY updated_at DESC, id DESC LIMIT ?"
        with self._lock:
            rows = self._db.execute(sql, (*args, limit + 1)).fetchall()
        records = tuple(_record_of(r) for r in rows[:limit])
        more = len(rows) > limit
        last = records[-1] if records else None
        return SessionPage(records, f"{last.updated_at}|{last.id}" if more and last else None)

    # -- journal -------------------------------------------------------------------------

    def append_event(self, session_id: str, wire: Mapping[str, Any]) -> Mapping[str, Any]:
        """Journal one update; returns it as journaled: `wire` itself, or its `finite`
        copy when it held something JSON cannot (what clients must be shown too)."""
        try:
            text = json.dumps(wire, separators=(",", ":"), allow_nan=False)
        except (ValueError, TypeError):
            wire = finite(wire)
            text = json.dumps(wire, separators=(",", ":"))
        self._append("events", "wire", session_id, text)
        return wire

    def append_message(self, session_id: str, message: Message) -> None:
        body = dumps_safe(message_to_json(message), separators=(",", ":"))
        self._append("messages", "body", session_id, body)

    def _append(self, table: str, column: str, session_id: str, value: str) -> None:
        with self._tx() as db:
            db.execute(
                f"INSERT INTO {table} (session_id, seq, {column}) VALUES (?, "
                f"(SELECT COALESCE(MAX(seq), 0) + 1 FROM {table} WHERE session_id = ?), ?)",
                (session_id, session_id, value),
            )

    def clear_messages(self, session_id: str) -> None:
        """Forget the model's context (the journal of what was shown stays)."""
        with self._tx() as db:
            db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))

    # -- model context -------------------------------------------------------------------

    def context(self, session_id: str) -> ContextRecord:
        with self._lock:
            row = self._db.execute(
                "SELECT system, instructions, start, summary, spending FROM contexts"
                " WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        if row is None:
            return ContextRecord()
        return ContextRecord(row[0], json.loads(row[1]), row[2], row[3], _spending(row[4]))

    def save_context(self, session_id: str, **fields: Any) -> None:
        """Set fields of a session's `ContextRecord` (`system`, `instructions`,
        `start`, `summary`, `spending`), creating the row when needed."""
        allowed = {"system", "instructions", "start", "summary", "spending"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot save {sorted(unknown)}")
        names = list(fields)
        values = [dumps_safe(v) if isinstance(v, Mapping) else v for v in fields.values()]
        updates = ", ".join(f"{n} = excluded.{n}" for n in names)
        with self._tx() as db:
            db.execute(
                f"INSERT INTO contexts (session_id, {', '.join(names)}) "
                f"VALUES (?{', ?' * len(names)}) "
                f"ON CONFLICT(session_id) DO UPDATE SET {updates}",
                (session_id, *values),
            )

    def learned_window(self, model: str) -> int | None:
        with self._lock:
            row = self._db.execute(
                "SELECT tokens FROM model_windows WHERE model = ?", (model,)
            ).fetchone()
        return None if row is None else int(row[0])

    def learn_window(self, model: str, tokens: int) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO model_windows (model, tokens) VALUES (?, ?) "
                "ON CONFLICT(model) DO UPDATE SET tokens = excluded.tokens",
                (model, tokens),
            )

    def events(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT seq, wire FROM events WHERE session_id = ? ORDER BY seq", session_id
        )
        return [wire for seq, text in rows if (wire := _decode(text, dict, seq)) is not None]

    def messages(self, session_id: str, upto: int | None = None) -> list[Message]:
        """The model context's messages, in order; with `upto`, those journaled by
        then (`last_message`)."""
        rows = self._rows(
            "SELECT seq, body FROM messages WHERE session_id = ? AND seq <= ? ORDER BY seq",
            session_id,
            (1 << 62) if upto is None else upto,
        )
        return [m for seq, text in rows if (m := _decode(text, message_from_json, seq)) is not None]

    def last_message(self, session_id: str) -> int:
        """Where the model context ends now: `messages(upto=...)` gives it as it is."""
        sql = "SELECT COALESCE(MAX(seq), 0), '' FROM messages WHERE session_id = ?"
        return int(self._rows(sql, session_id)[0][0])

    def _rows(self, sql: str, session_id: str, *more: object) -> list[tuple[int, str]]:
        with self._lock:
            return self._db.execute(sql, (session_id, *more)).fetchall()


def outputs_dir(data: Path, session_id: str) -> Path:
    """Where the full outputs of a session's commands are kept, under the data dir
    `data` (next to the store, and deleted with the session's rows)."""
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in session_id)
    return data / "outputs" / safe


def _decode(text: str, build: Callable[[Any], T], seq: int) -> T | None:
    """One journal row, repaired (`finite`), or None when it cannot be read."""
    try:
        return build(loads_finite(text))
    except (ValueError, TypeError, KeyError) as err:
        log.warning("skipping journal row %d that cannot be read: %r", seq, err)
        return None


def _spending(text: str | None) -> Mapping[str, Any] | None:
    """A context row's spending, or None when there is none or it does not decode."""
    if text is None:
        return None
    try:
        value = finite(json.loads(text))
    except ValueError as err:
        log.warning("ignoring a session's spending that cannot be read: %r", err)
        return None
    return value if isinstance(value, dict) else None


def _row_of(r: SessionRecord) -> Sequence[Any]:
    return (
        r.id,
        r.cwd,
        dumps_safe(list(r.additional_dirs)),
        r.title,
        r.created_at,
        r.updated_at,
        dumps_safe(dict(r.runtime)),
        dumps_safe(dict(r.runtime_state)),
        dumps_safe(dict(r.config)),
        dumps_safe(dict(r.approvals)),
    )


def _record_of(row: Sequence[Any]) -> SessionRecord:
    return SessionRecord(
        id=row[0],
        cwd=row[1],
        additional_dirs=tuple(json.loads(row[2])),
        title=row[3],
        created_at=row[4],
        updated_at=row[5],
        runtime=json.loads(row[6]),
        runtime_state=json.loads(row[7]),
        config=json.loads(row[8]),
        approvals=json.loads(row[9]),
    )
