"""The store's schema migrations on real SQLite files: a file the first loopd wrote
is brought up to date with its rows kept, each migration runs once however many
processes open the file, and what a session has spent round-trips."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from loopd.engine.guard import LoopGuardSnapshot
from loopd.engine.ports import Spending
from loopd.store.schema import MIGRATIONS, SCHEMA
from loopd.store.sqlite import SessionRecord, SqliteStore


def old_store(path: Path) -> None:
    """A store as written before any migration: the first schema, one session."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute(
        "INSERT INTO sessions (id, cwd, created_at, updated_at, runtime_state)"
        """ VALUES ('s1', '/w', 't', 't', '{"cost": 1.25}')"""
    )
    db.execute("INSERT INTO contexts (session_id, system, start) VALUES ('s1', 'frozen', 3)")
    db.commit()
    db.close()


def version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


def test_an_old_file_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    old_store(path)
    assert version(path) == 0
    store = SqliteStore(path)
    try:
        record = store.context("s1")
        assert (record.system, record.start, record.spending) == ("frozen", 3, None)
        got = store.get("s1")
        assert got is not None and got.runtime_state == {"cost": 1.25}
        kept = Spending(2.0, LoopGuardSnapshot(("a",), 1, 2.0, warned_cost=True))
        store.save_context("s1", spending=kept.to_json())
        assert Spending.from_json(store.context("s1").spending or {}) == kept
    finally:
        store.close()
    assert version(path) == len(MIGRATIONS) == 1


def test_processes_opening_one_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    old_store(path)
    errors: list[BaseException] = []

    def open_and_close() -> None:
        try:
            SqliteStore(path).close()
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=open_and_close) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert version(path) == 1
    SqliteStore(path).close()  # and again later: nothing left to apply


def test_a_damaged_spending_is_read_as_none(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "sessions.db")
    try:
        store.create(SessionRecord("s1", "/w"))
        store.save_context("s1", spending={"cost": -3, "guard": {"version": 1, "actions": 7}})
        assert Spending.from_json(store.context("s1").spending or {}) == Spending()
        with store.transaction() as db:
            db.execute("UPDATE contexts SET spending = 'not json' WHERE session_id = 's1'")
        assert store.context("s1").spending is None
    finally:
        store.close()
