"""Context benchmark: a session of 400 turns in a 20k-token window, through several
compactions, against the loopback fake (its own process, so its CPU is not ours).

The native engine with the real Anthropic provider over HTTP, journaling to the real
SQLite store; the model reads a file, then answers in 1,500 words, every turn. The
figures compare turns 391-400 with turns 10-19 (each a mean over ten turns, so both
sides average over whole compaction cycles): the CPU one turn costs this process,
and the bytes of the requests it sends. Target: both ratios at most 1.3.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.turn import FakeServer, NoApprover, StoreEmitter
from loopd.engine.loop import Engine, EngineConfig, EnginePorts
from loopd.engine.ports import Spending
from loopd.protocol.events import Prompt, TextBlock
from loopd.providers.anthropic import AnthropicProvider
from loopd.runtimes.native.store import StoreJournal
from loopd.store.sqlite import SessionRecord, SqliteStore
from loopd.testing.fakes import FakeClock, FakeToolBox, ScriptedPolicy

TURNS = 400
WINDOW = 20_000
EARLY, LATE = range(10, 20), range(TURNS - 10, TURNS)


async def session() -> dict[str, float]:
    fake = FakeServer([], "--window", str(WINDOW), "--long-session", "1500")
    tmp = tempfile.TemporaryDirectory()
    store = SqliteStore(Path(tmp.name) / "bench.db")
    store.create(SessionRecord(id="bench", cwd="/", created_at="0", updated_at="0"))
    sent: list[int] = []

    async def measure(request: httpx.Request) -> None:
        sent.append(len(request.content))

    client = httpx.AsyncClient(timeout=60, event_hooks={"request": [measure]})
    provider = AnthropicProvider(api_key="k", base_url=fake.base_url, client=client)
    compactions = Compactions()
    ports = EnginePorts(
        provider,
        FakeToolBox(),
        StoreEmitter(store, "bench"),
        NoApprover(),
        ScriptedPolicy(),
        StoreJournal(store, "bench"),
        FakeClock(),
        context=compactions,
    )
    engine = Engine("bench", EngineConfig(model="bench"), ports)
    cpu: list[float] = []
    sizes: list[list[int]] = []
    try:
        for n in range(TURNS):
            before, start = len(sent), time.process_time()
            outcome = await engine.run(Prompt((TextBlock(f"explain module {n}"),)))
            cpu.append(time.process_time() - start)
            sizes.append(sent[before:])
            assert outcome.stop_reason == "end_turn", outcome
    finally:
        await client.aclose()
        fake.close()
        store.close()
        tmp.cleanup()
    return _figures(cpu, sizes, engine, compactions.count)


class Compactions:
    def __init__(self) -> None:
        self.count = 0

    def compacted(self, start: int, summary: str) -> None:
        self.count += 1

    def spent(self, spending: Spending) -> None:
        return None


def _figures(
    cpu: list[float], sizes: list[list[int]], engine: Engine, compactions: int
) -> dict[str, float]:
    mean = statistics.fmean
    early_cpu, late_cpu = mean(cpu[i] for i in EARLY), mean(cpu[i] for i in LATE)
    early = mean(s for i in EARLY for s in sizes[i])
    late = mean(s for i in LATE for s in sizes[i])
    return {
        "cpu_ms_turns_10_19": early_cpu * 1000,
        "cpu_ms_turns_391_400": late_cpu * 1000,
        "cpu_ratio": late_cpu / early_cpu,
        "request_kb_turns_10_19": early / 1024,
        "request_kb_turns_391_400": late / 1024,
        "request_ratio": late / early,
        "compactions": compactions,
        "history_messages": len(engine.history),
    }


def main() -> dict[str, dict[str, float]]:
    title = f"{TURNS}_turns_in_a_{WINDOW // 1000}k_window (turn 400 vs turn 10; target <= 1.3)"
    return {title: asyncio.run(session())}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
