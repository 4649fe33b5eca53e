"""Session leases over the real store file, as two processes would see it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from loopd.store.lease import TTL, Leases
from loopd.store.sqlite import SessionRecord, SqliteStore
from loopd.testing.fakes import FakeClock


def stores(tmp_path: Path) -> tuple[SqliteStore, SqliteStore]:
    """Two connections to one store file, each like its own process."""
    first = SqliteStore(tmp_path / "sessions.db")
    first.create(SessionRecord(id="s1", cwd="/w"))
    return first, SqliteStore(tmp_path / "sessions.db")


def pair(tmp_path: Path, clock: FakeClock) -> tuple[Leases, Leases]:
    """Two processes' leases on one store file, on one fake wall clock."""
    one, two = stores(tmp_path)
    return Leases(one, clock=clock.monotonic), Leases(two, clock=clock.monotonic)


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return int(proc.stdout)


def test_a_held_lease_refuses_another_holder_and_names_it(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    a, b = pair(tmp_path, clock)

    assert a.take("s1") is None
    holder = b.take("s1")
    assert holder is not None and holder.owner == a.owner and holder.pid == a.pid
    assert b.holder("s1") == holder
    assert a.holder("s1") is None  # our own lease binds nobody here
    assert a.take("s1") is None  # renewing our own lease


def test_a_released_lease_is_free(tmp_path: Path) -> None:
    one, two = stores(tmp_path)
    a, b = Leases(one), Leases(two)
    assert a.take("s1") is None
    a.release("s1")
    assert b.take("s1") is None
    a.release("s1")  # not ours any more: stays with b
    assert a.take("s1") is not None


def test_an_expired_lease_is_taken_over_and_its_old_holder_learns_it(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    a, b = pair(tmp_path, clock)
    assert a.take("s1") is None

    clock.now += TTL - 1
    assert a.renew() == set()  # renewed in time: still a's
    clock.now += TTL - 1
    assert b.take("s1") is not None

    clock.now += TTL + 1  # a stalled past its expiry
    assert b.take("s1") is None
    assert a.renew() == {"s1"}
    assert a.take("s1") is not None  # and a cannot take it back while b lives


def test_a_lease_of_a_dead_process_on_this_host_is_taken_over(tmp_path: Path) -> None:
    one, two = stores(tmp_path)
    gone = Leases(one, pid=dead_pid())
    assert gone.take("s1") is None
    b = Leases(two)
    assert b.holder("s1") is None
    assert b.take("s1") is None


def test_a_lease_of_a_killed_process_not_yet_reaped_is_taken_over(tmp_path: Path) -> None:
    """A daemon killed while its parent (the forwarder that started it, or an init
    that never reaps) has not waited for it stays a zombie: it holds nothing."""
    one, two = stores(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        held = Leases(one, pid=child.pid)
        assert held.take("s1") is None
        other = Leases(two)
        assert other.take("s1") is not None  # alive: it binds
        child.kill()
        while Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] != "Z":
            pass  # the kill lands; nobody waits for it yet
        assert other.holder("s1") is None
        assert other.take("s1") is None
    finally:
        child.kill()
        child.wait()


def test_a_lease_whose_pid_now_names_another_process_is_taken_over(tmp_path: Path) -> None:
    """The holder was killed and the system gave its pid to a newer process: that
    one started at another time, so the lease is free at once."""
    one, two = stores(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        held = Leases(one, pid=child.pid)
        assert held.take("s1") is None
        other = Leases(two)
        assert other.take("s1") is not None  # the holder runs: it binds
        held.started = str(int(held.started) - 1)  # as if an older process had the pid
        assert held.take("s1") is None
        assert other.take("s1") is None
    finally:
        child.kill()
        child.wait()


def test_a_lease_from_another_host_binds_until_it_expires(tmp_path: Path) -> None:
    """A pid elsewhere cannot be checked here: only expiry frees it."""
    clock = FakeClock(1000.0)
    one, two = stores(tmp_path)
    remote = Leases(one, clock=clock.monotonic, pid=dead_pid(), host="elsewhere")
    assert remote.take("s1") is None
    local = Leases(two, clock=clock.monotonic)
    assert local.take("s1") is not None
    clock.now += TTL
    assert local.take("s1") is None


def test_deleting_a_session_drops_its_lease(tmp_path: Path) -> None:
    one, two = stores(tmp_path)
    a = Leases(one)
    assert a.take("s1") is None
    assert one.delete("s1")
    two.create(SessionRecord(id="s1", cwd="/w"))
    assert Leases(two).take("s1") is None


async def test_held_leases_are_renewed_while_held_and_no_longer(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    one, two = stores(tmp_path)
    a = Leases(one, clock=clock.monotonic, sleep=clock.sleep)
    b = Leases(two, clock=clock.monotonic)
    assert a.take("s1") is None
    for _ in range(20):  # the renewing task runs, the fake clock goes on
        await asyncio.sleep(0)
    assert clock.now > 1000.0 + 3 * TTL
    assert b.take("s1") is not None  # renewed all along: still a's

    a.release("s1")
    stopped = clock.now
    for _ in range(5):
        await asyncio.sleep(0)
    assert clock.now == stopped  # nothing left to renew: the task ended
    assert b.take("s1") is None


def test_of_many_racing_takers_exactly_one_wins(tmp_path: Path) -> None:
    """Each taker on its own connection (SQLite locks them as it locks processes),
    all released at once, for several sessions in a row."""
    seed = SqliteStore(tmp_path / "sessions.db")
    ids = [f"s{i}" for i in range(10)]
    for sid in ids:
        seed.create(SessionRecord(id=sid, cwd="/w"))
    takers = [Leases(SqliteStore(tmp_path / "sessions.db")) for _ in range(6)]
    for sid in ids:
        start = threading.Barrier(len(takers))

        def race(leases: Leases, sid: str = sid, start: threading.Barrier = start) -> bool:
            start.wait()
            return leases.take(sid) is None

        with ThreadPoolExecutor(len(takers)) as pool:
            won = list(pool.map(race, takers))
        assert won.count(True) == 1, (sid, won)
