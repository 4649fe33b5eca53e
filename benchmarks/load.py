"""Load on one daemon: many editors, many sessions, all streaming at once.

N editor connections (`--acp` `loopd acp` and `--lsp` `loopd lsp` forwarders, all
served by one daemon), each with `--sessions` sessions. Every turn's reply is a
`--chunks`-chunk stream from the loopback fake model (in its own process, so its
CPU is not the daemon's). In one run, on one daemon:

1. stored sessions: `--stored` sessions in the store before the daemon starts, one
   of them `--messages` messages long; `session/list` (median of 5) and
   `session/load` of the long one (its whole history replayed), in ms;
2. alone: one session's turn, nothing else running (median of 3);
3. sequential: every session's turn, one after another;
4. burst: every session's turn at once;
5. floor: as many bare httpx-sse consumers of the same reply at once, against the
   same fake, and nothing else (`benchmarks.turn.bare_consumer`): what the fake and
   the machine allow any client.

Printed: first-chunk and end-to-end p50/p99 of the burst against alone and
against the floor, the
burst's wall time against the sequential one's, the daemon's RSS per idle session
(sessions opened, none streaming) and per streaming session (the burst's peak),
and whether anything was lost: every chunk of every turn reached its editor and
the journal, in order. Targets beside the figures (issue 25). Bounded in time
(`--timeout`, seconds for the whole run).

    python -m benchmarks.load [--acp 10] [--lsp 10] [--sessions 3] [--chunks 2000]
                              [--stored 1000] [--messages 10000] [--timeout 900]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from benchmarks.acp_start import agent_env
from benchmarks.editors import Editor, Protocol
from benchmarks.memory import TreeMemory, rss
from benchmarks.turn import FakeServer, bare_consumer
from loopd.protocol.events import AgentMessageChunk, TextBlock, UserMessageChunk
from loopd.protocol.events_wire import to_wire
from loopd.protocol.messages import Message, TextPart
from loopd.store.sqlite import SessionRecord, SqliteStore

LOOPD = [sys.executable, "-m", "loopd"]
MB = 1 << 20


@dataclass(frozen=True, slots=True)
class Run:
    acp: int
    lsp: int
    sessions: int
    chunks: int
    stored: int
    messages: int

    @property
    def text(self) -> str:
        return " ".join(f"w{i}" for i in range(self.chunks))

    @property
    def turns(self) -> int:
        return (self.acp + self.lsp) * self.sessions


@dataclass(slots=True)
class Figures:
    list_ms: float = 0.0
    load_ms: float = 0.0
    alone_first: float = 0.0
    alone_end: float = 0.0
    sequential: float = 0.0
    burst: float = 0.0
    burst_first: Sequence[float] = ()
    burst_end: Sequence[float] = ()
    floor_first: Sequence[float] = ()
    floor_end: Sequence[float] = ()
    floor_failed: int = 0  # bare consumers whose connection the fake dropped
    rss_none: int = 0  # the daemon, editors connected, one session each
    rss_idle: int = 0  # every session open, none streaming
    rss_ready: int = 0  # just before the burst (the long session loaded, turns run)
    rss_peak: int = 0  # the burst's peak
    lost: tuple[str, ...] = ()  # what did not arrive, or arrived out of order
    updates: float = 0.0  # agent_message_chunk updates per burst turn, mean


def stock(data: Path, cwd: Path, run: Run) -> str:
    """`run.stored` sessions in a fresh store, the first `run.messages` long (a user
    prompt and an answer in turn); its id."""
    data.mkdir(parents=True)
    store = SqliteStore(data / "sessions.db")
    stamp = "2026-01-01T00:00:00+00:00"
    try:
        for i in range(run.stored):
            store.create(SessionRecord(f"stored-{i}", str(cwd), title=f"stored {i}",
                                       created_at=stamp, updated_at=stamp))  # fmt: skip
        for i in range(run.messages):
            text, mid = f"message {i} " * 8, f"m{i}"
            if i % 2 == 0:
                wire = to_wire(UserMessageChunk(TextBlock(text), mid))
                message = Message("user", (TextPart(text),))
            else:
                wire = to_wire(AgentMessageChunk(text, mid))
                message = Message("assistant", (TextPart(text),))
            store.append_event("stored-0", wire)
            store.append_message("stored-0", message)
    finally:
        store.close()
    return "stored-0"


def daemon_pid(env: dict[str, str]) -> int:
    done = subprocess.run([*LOOPD, "daemon", "status", "--json"], env=env, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    pid: int = json.loads(done.stdout)["pid"]
    return pid


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest rank: the smallest value with at least p% of them at or below it."""
    ordered = sorted(values)
    rank = math.ceil(len(ordered) * p / 100)
    return ordered[min(max(rank, 1), len(ordered)) - 1]


async def measure(run: Run, root: Path) -> Figures:
    figures = Figures()
    work = root / "work"
    work.mkdir()
    long_id = stock(root / "data", work, run)
    fake = FakeServer([{"text": run.text} for _ in range(3 + 3 * run.turns)])
    env = agent_env(root, os.environ.get("PATH", "/usr/bin:/bin"))
    env |= {"LOOPD_DAEMON": "on", "ANTHROPIC_BASE_URL": fake.base_url}
    editors: list[Editor] = []
    try:
        kinds: tuple[tuple[Protocol, int], ...] = (("acp", run.acp), ("lsp", run.lsp))
        for protocol, count in kinds:
            for _ in range(count):
                editors.append(await Editor.spawn(LOOPD, protocol, env, work))
        pid = daemon_pid(env)
        sessions = [(e, await e.new(work)) for e in editors]
        figures.rss_none = rss(pid)
        sessions += [(e, await e.new(work)) for e in editors for _ in range(run.sessions - 1)]
        figures.rss_idle = rss(pid)
        await _stored(editors[0], work, long_id, figures)  # after: its load's memory stays
        await _alone(*sessions[0], figures)
        start = time.perf_counter()
        for editor, sid in sessions:
            await editor.prompt(sid, "go")
        figures.sequential = time.perf_counter() - start
        figures.rss_ready = rss(pid)
        with TreeMemory(lambda: [pid]).sampling() as memory:
            figures.burst_first, figures.burst_end, figures.burst = await _burst(sessions)
        figures.rss_peak = memory.peak
        figures.floor_first, figures.floor_end, figures.floor_failed = await _floor(
            fake.base_url, run.turns
        )
        figures.lost = _lost(run, root / "data", sessions)
        figures.updates = statistics.mean(len(e.streams[sid].turn) for e, sid in sessions)
    finally:
        for editor in editors:
            await editor.close()
        stop = [*LOOPD, "daemon", "stop"]
        await asyncio.to_thread(subprocess.run, stop, env=env, capture_output=True, timeout=60)
        fake.close()
    return figures


async def _stored(editor: Editor, work: Path, long_id: str, figures: Figures) -> None:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        await editor.session("list", {"cwd": str(work)})
        times.append(time.perf_counter() - start)
    figures.list_ms = statistics.median(times) * 1000
    start = time.perf_counter()
    await editor.session("load", {"sessionId": long_id, "cwd": str(work), "mcpServers": []})
    figures.load_ms = (time.perf_counter() - start) * 1000


async def _alone(editor: Editor, sid: str, figures: Figures) -> None:
    firsts, ends = [], []
    for _ in range(3):
        end = await editor.prompt(sid, "go")
        stream = editor.streams[sid]
        assert stream.first is not None
        firsts.append(stream.first - stream.sent)
        ends.append(end - stream.sent)
    figures.alone_first, figures.alone_end = statistics.median(firsts), statistics.median(ends)


async def _burst(sessions: list[tuple[Editor, str]]) -> tuple[list[float], list[float], float]:
    start = time.perf_counter()
    ends = await asyncio.gather(*(editor.prompt(sid, "go") for editor, sid in sessions))
    wall = time.perf_counter() - start
    firsts, totals = [], []
    for (editor, sid), end in zip(sessions, ends, strict=True):
        stream = editor.streams[sid]
        firsts.append((stream.first or end) - stream.sent)
        totals.append(end - stream.sent)
    return firsts, totals, wall


async def _floor(base_url: str, turns: int) -> tuple[list[float], list[float], int]:
    """`turns` bare consumers at once: the first event and the end of each that
    read its reply, in seconds, and how many failed (the fake dropped them)."""
    limits = httpx.Limits(max_connections=turns, max_keepalive_connections=turns)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:

        async def one() -> tuple[float, float] | None:
            start = time.perf_counter()
            try:
                first = await bare_consumer(client, base_url)
            except httpx.TransportError:
                return None
            return first - start, time.perf_counter() - start

        times = [t for t in await asyncio.gather(*(one() for _ in range(turns))) if t]
    return [t[0] for t in times], [t[1] for t in times], turns - len(times)


def _lost(run: Run, data: Path, sessions: list[tuple[Editor, str]]) -> tuple[str, ...]:
    """Each session's chunks as its editor saw them, against the journal's, and the
    burst's turn against the reply the fake sent (loopd may join deltas that come
    together into one update: the text, whole and in order, is what must arrive)."""
    store = SqliteStore(data / "sessions.db")
    lost: list[str] = []
    try:
        for editor, sid in sessions:
            seen = editor.streams[sid]
            journal = [e["content"]["text"] for e in store.events(sid)
                       if e.get("sessionUpdate") == "agent_message_chunk"]  # fmt: skip
            if "".join(seen.turn) != run.text:
                lost.append(f"{sid}: the editor's last turn is not the reply")
            if journal != seen.chunks:
                lost.append(f"{sid}: the journal and the editor differ")
    finally:
        store.close()
    return tuple(lost)


def table(run: Run, f: Figures, machine: str) -> str:
    n = run.turns
    idle = (f.rss_idle - f.rss_none) / max(n - run.acp - run.lsp, 1)
    streaming = (f.rss_peak - f.rss_ready) / n
    p99_first = percentile(f.burst_first, 99)
    rows = [
        _vs("first chunk p50", percentile(f.burst_first, 50), f.alone_first, ""),
        _vs("first chunk p99", p99_first, f.alone_first, _met(p99_first <= 0.3, "<= 300 ms")),
        _vs("end to end p50", percentile(f.burst_end, 50), f.alone_end, ""),
        _vs("end to end p99", percentile(f.burst_end, 99), f.alone_end, ""),
        *(_vs(f"{what} p{p}", percentile(burst, p), percentile(floor, p), "", "floor")
          for what, burst, floor in (("first chunk", f.burst_first, f.floor_first),
                                     ("end to end", f.burst_end, f.floor_end))
          for p in (50, 99) if floor),
        ("burst / sequential (wall)", f"{f.burst:.2f} s / {f.sequential:.2f} s",
         f"{f.burst / f.sequential:.2f}x", _met(f.burst <= f.sequential, "<= 1.00x")),
        ("RSS per idle session", f"{idle / MB:.2f} MB", "", _met(idle <= 2 * MB, "<= 2 MB")),
        ("RSS per streaming session", f"{streaming / MB:.2f} MB", "", ""),
        (f"session/list, {run.stored} stored", f"{f.list_ms:.1f} ms", "",
         _met(f.list_ms <= 50, "<= 50 ms")),
        (f"session/load, {run.messages} messages", f"{f.load_ms:.0f} ms", "",
         _met(f.load_ms <= 500, "<= 500 ms")),
        ("nothing lost (editors and journal, in order)",
         "yes" if not f.lost else f"NO: {len(f.lost)}", "", _met(not f.lost, "all")),
    ]  # fmt: skip
    head = (
        f"load: {run.acp} ACP + {run.lsp} LSP editors x {run.sessions} sessions = {n} turns of"
        f" {run.chunks} chunks at once ({f.updates:.0f} updates each), one daemon ({machine});"
        f" daemon RSS {f.rss_none / MB:.0f} MB with one session per editor,"
        f" {f.rss_ready / MB:.0f} MB before the burst, {f.rss_peak / MB:.0f} MB at its peak"
    )
    lines = [head, f"{'':46} {'figure':>22} {'ratio':>7}  target"]
    lines += [f"{a:46} {b:>22} {c:>7}  {d}" for a, b, c, d in rows]
    if f.floor_failed:
        lines.append(
            f"  floor: {f.floor_failed} of {n} bare consumers failed (the fake dropped them)"
        )
    return "\n".join(lines + [f"  lost: {x}" for x in f.lost])


def _vs(
    what: str, burst: float, base: float, target: str, against: str = "alone"
) -> tuple[str, str, str, str]:
    figure = f"{burst * 1e3:.0f} ms / {base * 1e3:.0f} ms"
    return f"{what}, burst / {against}", figure, f"{burst / base:.1f}x", target


def _met(ok: bool, target: str) -> str:
    return f"{target} {'met' if ok else 'NOT met'}"


def main(argv: Sequence[str] = ()) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load")
    for flag, default in (("acp", 10), ("lsp", 10), ("sessions", 3), ("chunks", 2000),
                          ("stored", 1000), ("messages", 10_000), ("timeout", 900)):  # fmt: skip
        parser.add_argument(f"--{flag}", type=int, default=default)
    args = parser.parse_args(argv)
    run = Run(args.acp, args.lsp, args.sessions, args.chunks, args.stored, args.messages)
    machine = f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(asyncio.wait_for(measure(run, Path(tmp).resolve()), args.timeout))
    print(table(run, figures, machine))
    return {"load": {
        "first_chunk_p99_s": percentile(figures.burst_first, 99),
        "floor_first_chunk_p99_s": percentile(figures.floor_first or [math.nan], 99),
        "burst_vs_sequential": figures.burst / figures.sequential,
        "list_ms": figures.list_ms, "load_ms": figures.load_ms, "lost": len(figures.lost),
    }}  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
