"""The sessions live in one process, shared by every `SessionManager` in it.

`loopd acp --no-daemon` has one manager and so one table. The daemon has a manager
per editor connection, each with that editor's runtimes, credentials and config,
all over one table: a session opened from Zed is the same live session when VS Code
loads it, and a turn started in one editor streams to every editor attached.

The table holds the store and this process's leases (`loopd.store.lease`): every
manager in the process is the one lease holder, so they never refuse each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loopd.sessions.live import LiveSession
from loopd.store.lease import Leases
from loopd.store.sqlite import SqliteStore


@dataclass(slots=True)
class SessionTable:
    store: SqliteStore
    leases: Leases
    live: dict[str, LiveSession] = field(default_factory=dict)
