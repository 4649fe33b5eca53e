"""Whatever runtime emits it (a foreign CLI's tool output, say), a tool call's text
is bounded before it is journaled and shown."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loopd.protocol.events import TextBlock, ToolCallUpdated
from loopd.sessions.live import MAX_SHOWN_TEXT, SessionEmitter
from loopd.store.sqlite import SessionRecord, SqliteStore


class Shown:
    def __init__(self) -> None:
        self.updates: list[Mapping[str, Any]] = []

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        self.updates.append(update)


async def test_a_huge_tool_output_is_cut_before_the_journal_and_the_wire(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.create(SessionRecord(id="s", cwd=str(tmp_path)))
    link = Shown()
    emitter = SessionEmitter(store, "s", lambda: [link], lambda: "now")  # type: ignore[list-item]
    await emitter.emit(ToolCallUpdated("t", content=(TextBlock("y" * 5_000_000),)))

    shown = link.updates[0]["content"][0]["content"]["text"]
    assert len(shown) < MAX_SHOWN_TEXT + 100
    assert "characters cut from the middle" in shown
    assert store.events("s")[0]["content"][0]["content"]["text"] == shown
