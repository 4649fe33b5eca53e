"""Leases: a live session belongs to one loopd process at a time.

Every loopd process (`loopd acp`, `loopd lsp`, `loopd run`) shares the one store, so
without a rule two of them could open the same session and run turns at once,
interleaving their rows (a reload would read user, user, assistant, assistant). The
rule is a row per live session in `leases`: who holds it (a per-process owner id,
its pid and host) and until when. A process takes it in one `BEGIN IMMEDIATE`
transaction when it opens the session live, renews it while the session stays open
(every `ttl / 3` seconds), confirms it at each turn, and drops it when the session
closes. A lease is free when nobody holds it, when it has expired (its process hung
or the machine slept past `ttl`), or when its holder's pid is no longer alive on
this host (killed, crashed), or now names another process (its start time
differs, where the system tells it): a dead process never blocks a session.

A process that finds the lease held elsewhere is refused (`take` returns who holds
it); reading a session's rows (`loopd sessions show`) never needs the lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from loopd.store.sqlite import SqliteStore

log = logging.getLogger(__name__)

TTL = 30.0  # seconds a lease lasts unless renewed

SCHEMA = """
CREATE TABLE IF NOT EXISTS leases (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    owner TEXT NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started TEXT NOT NULL,
    expires REAL NOT NULL
)
"""
_HOLDER = "SELECT owner, pid, host, started, expires FROM leases WHERE session_id = ?"


@dataclass(frozen=True, slots=True)
class Holder:
    """The process holding a session's lease."""

    owner: str
    pid: int
    host: str


class Leases:
    """This process's leases in `store`. `clock` is wall time (seconds), shared by
    every process on the store's host, and `sleep` waits between renewals; `pid`
    and `host` name this process to the others. Thread-safe as the store is; the
    renewing task runs on the event loop of the first `take` made from one."""

    def __init__(
        self,
        store: SqliteStore,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        ttl: float = TTL,
        pid: int | None = None,
        host: str | None = None,
    ) -> None:
        self.store, self.clock, self.sleep, self.ttl = store, clock, sleep, ttl
        self.pid = os.getpid() if pid is None else pid
        self.host = socket.gethostname() if host is None else host
        self.started = _started(self.pid)
        self.owner = f"{self.pid}@{self.host}/{uuid.uuid4().hex[:12]}"
        self._held: set[str] = set()
        self._renewing: asyncio.Task[None] | None = None
        with store.transaction() as db:
            db.execute(SCHEMA)

    def take(self, session_id: str) -> Holder | None:
        """Hold `session_id` for `ttl` from now (taking it over when its holder is
        gone, renewing it when it is ours); returns the live holder when another
        process has it, and then holds nothing."""
        with self.store.transaction() as db:
            row = db.execute(_HOLDER, (session_id,)).fetchone()
            if row is not None and row[0] != self.owner and self._alive(*row):
                return Holder(row[0], row[1], row[2])
            db.execute(
                "INSERT INTO leases (session_id, owner, pid, host, started, expires) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET "
                "owner = excluded.owner, pid = excluded.pid, host = excluded.host, "
                "started = excluded.started, expires = excluded.expires",
                (
                    session_id,
                    self.owner,
                    self.pid,
                    self.host,
                    self.started,
                    self.clock() + self.ttl,
                ),
            )
        if row is not None and row[0] != self.owner:
            log.info("took over the lease of %s from pid %d (gone)", session_id, row[1])
        self._held.add(session_id)
        self._keep_renewing()
        return None

    def holder(self, session_id: str) -> Holder | None:
        """The live holder of `session_id` when it is another process (read-only)."""
        with self.store.transaction() as db:
            row = db.execute(_HOLDER, (session_id,)).fetchone()
        if row is None or row[0] == self.owner or not self._alive(*row):
            return None
        return Holder(row[0], row[1], row[2])

    def release(self, session_id: str) -> None:
        """Drop the lease of `session_id` if it is still ours."""
        self._held.discard(session_id)
        with self.store.transaction() as db:
            db.execute(
                "DELETE FROM leases WHERE session_id = ? AND owner = ?", (session_id, self.owner)
            )
        if not self._held and self._renewing is not None:
            self._renewing.cancel()
            self._renewing = None

    def renew(self) -> set[str]:
        """Push back the expiry of every lease held; returns those lost meanwhile
        (taken over after this process stalled past `ttl`), which are dropped."""
        expires = self.clock() + self.ttl
        with self.store.transaction() as db:
            kept = {
                sid
                for sid in self._held
                if db.execute(
                    "UPDATE leases SET expires = ? WHERE session_id = ? AND owner = ?",
                    (expires, sid, self.owner),
                ).rowcount
            }
        lost, self._held = self._held - kept, kept
        for sid in lost:
            log.warning("lost the lease of %s to another loopd process", sid)
        return lost

    def _alive(self, owner: str, pid: int, host: str, started: str, expires: float) -> bool:
        """Whether a lease held by someone else still binds: unexpired, and, when
        it was taken on this host, its process is still running."""
        if expires <= self.clock():
            return False
        return host != self.host or _running(pid, started)

    def _keep_renewing(self) -> None:
        if self._renewing is not None and not self._renewing.done():
            return
        with contextlib.suppress(RuntimeError):  # no running loop: renewed at each take
            self._renewing = asyncio.get_running_loop().create_task(self._renew_forever())

    async def _renew_forever(self) -> None:
        while self._held:
            await self.sleep(self.ttl / 3)
            try:
                self.renew()
            except Exception:  # a busy or failing store: try again next time
                log.exception("could not renew session leases")


def _running(pid: int, started: str) -> bool:
    """Whether process `pid` runs, and is the one that started at `started`."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        pass
    fields = _stat(pid)
    if fields and fields[0] in ("Z", "X"):  # died, not yet reaped (a container's init
        return False  # may never reap the daemon a forwarder started)
    now = fields[19] if len(fields) > 19 else ""
    return not (started and now and now != started)


def _started(pid: int) -> str:
    """When process `pid` started (Linux: clock ticks since boot, from
    /proc/PID/stat), so a pid the system gave to a new process is told apart;
    "" where the system does not say."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else ""


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat after the name: state first; [] where the system does not say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return stat[stat.rfind(")") + 2 :].split()  # the name may hold spaces and ")"
