"""The journal never holds a bare NaN, and a row it cannot read never stops a load."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

from loopd.protocol.messages import Message, ToolUsePart
from loopd.store.sqlite import SessionRecord, SqliteStore, outputs_dir


def store_with_session(tmp_path: Path) -> SqliteStore:
    store = SqliteStore(tmp_path / "sessions.db")
    store.create(SessionRecord(id="s", cwd=str(tmp_path)))
    return store


def test_non_finite_numbers_are_written_as_strings(tmp_path: Path) -> None:
    store = store_with_session(tmp_path)
    store.append_message("s", Message("assistant", (ToolUsePart("t", "read", {"n": math.nan}),)))
    store.append_event("s", {"rawInput": {"n": math.inf}})
    db = sqlite3.connect(tmp_path / "sessions.db")
    rows = [r[0] for r in db.execute("SELECT body FROM messages UNION ALL SELECT wire FROM events")]
    for row in rows:
        json.loads(row, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(c)))
    assert store.messages("s")[0].parts[0] == ToolUsePart("t", "read", {"n": "NaN"})
    assert store.events("s") == [{"rawInput": {"n": "Infinity"}}]


def test_rows_an_older_loopd_poisoned_are_repaired_or_skipped(tmp_path: Path) -> None:
    store = store_with_session(tmp_path)
    store.append_message("s", Message("user", ()))
    with store._tx() as db:  # what an older loopd or a damaged file left behind
        for seq, body in (
            (
                2,
                '{"role":"assistant","parts":[{"type":"tool_use","id":"t",'
                '"name":"read","input":{"n":NaN}}]}',
            ),
            (3, "{not json"),
            (4, '{"role":"robot","parts":[]}'),
        ):
            db.execute("INSERT INTO messages VALUES ('s', ?, ?)", (seq, body))
        db.execute("INSERT INTO events VALUES ('s', 1, 'garbage')")
    messages = store.messages("s")
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[1].parts[0] == ToolUsePart("t", "read", {"n": "NaN"})
    assert store.events("s") == []


def test_deleting_a_session_removes_its_kept_outputs(tmp_path: Path) -> None:
    store = store_with_session(tmp_path)
    kept = outputs_dir(tmp_path, "s")
    kept.mkdir(parents=True)
    (kept / "call.log").write_text("all of it")
    assert store.delete("s")
    assert not kept.exists()
    assert outputs_dir(tmp_path, "../evil") == tmp_path / "outputs" / "___evil"
