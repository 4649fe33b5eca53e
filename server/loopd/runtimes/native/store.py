"""The native engine's journal and window book, kept in the session store.

The engine (`loopd.engine`) is pure and talks to its `Journal`, `ContextJournal` and
`WindowBook` ports; these are those ports over `SqliteStore`, so a session's history,
its compacted view and the windows learned from overflow errors survive the process
and are shared by every process on the store. Kept apart from the runtime itself
because they are the only part of it that knows the store's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopd.engine.ports import Spending
from loopd.protocol.messages import Message
from loopd.store.sqlite import SqliteStore


@dataclass(slots=True)
class StoreJournal:
    """The history, the compacted view and the spending, journaled to the session's
    rows."""

    store: SqliteStore
    session_id: str

    async def append(self, message: Message) -> None:
        self.store.append_message(self.session_id, message)

    def compacted(self, start: int, summary: str) -> None:
        self.store.save_context(self.session_id, start=start, summary=summary)

    def spent(self, spending: Spending) -> None:
        self.store.save_context(self.session_id, spending=spending.to_json())


@dataclass(slots=True)
class StoreWindows:
    """Learned windows, per runtime (two endpoints may serve one model id with
    different windows) and model, in the store every process shares."""

    store: SqliteStore
    runtime: str

    def learned(self, model: str) -> int | None:
        return self.store.learned_window(f"{self.runtime}/{model}")

    def learn(self, model: str, window: int) -> None:
        self.store.learn_window(f"{self.runtime}/{model}", window)
