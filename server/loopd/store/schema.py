"""The session store's tables, as the first loopd wrote them, and the migrations since.

The schema is `SCHEMA` (as the first loopd wrote it) and then `MIGRATIONS` in
order, `PRAGMA user_version` counting those applied: each runs once per file, in
the transaction that bumps the count, so processes opening one store at once never
apply one twice. An older loopd still reads a migrated file (it names its columns).
Adding a column is a new entry at the end of `MIGRATIONS`, never an edit of
`SCHEMA` or of an entry already released: a file is only ever moved forward.
"""

from __future__ import annotations

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    additional_dirs TEXT NOT NULL DEFAULT '[]',
    title TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    runtime TEXT NOT NULL DEFAULT '{}',
    runtime_state TEXT NOT NULL DEFAULT '{}',
    config TEXT NOT NULL DEFAULT '{}',
    approvals TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at DESC, id);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    wire TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS contexts (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    system TEXT,
    instructions TEXT NOT NULL DEFAULT '{}',
    start INTEGER NOT NULL DEFAULT 0,
    summary TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS model_windows (
    model TEXT PRIMARY KEY,
    tokens INTEGER NOT NULL
);
"""
MIGRATIONS = (
    # 1: what the session has spent ({"cost", "guard"}), kept at every step of a turn
    "ALTER TABLE contexts ADD COLUMN spending TEXT",
)
