"""Turn benchmarks: the native engine against the loopback fake, as ratios.

1. Streaming overhead: one turn whose reply is a 2,000-chunk stream, consumed by the
   native engine (real Anthropic provider over HTTP, events journaled to the real
   SQLite store) versus a bare httpx-sse consumer that only parses the same stream.
   Target: at most 1.15x.
2. History cost: the CPU time of one short turn with 10 versus 1,000 prior turns of
   history. Target: at most 1.5x.
3. Where the streaming time goes, layer by layer, each against the bare httpx-sse
   consumer in CPU and wall time: the response's bytes only; the provider's events
   (SSE parse and the Anthropic decoder); the engine's turn (its batching into
   updates) showing to nobody; the engine journaling to SQLite. What the daemon adds
   on top (ACP or LSP encoding, the pipe to the editor) is in `warm_start`'s long
   reply; `python -m benchmarks.turn` prints the table.

The fake server runs in its own process so its CPU is not counted as ours; rounds
alternate between subject and baseline so drift hits both alike.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from loopd.engine.limits import Limits
from loopd.engine.loop import Engine, EngineConfig, EnginePorts
from loopd.protocol.events import Prompt, SessionEvent, TextBlock
from loopd.protocol.events_wire import to_wire
from loopd.protocol.messages import Message, TextPart, ToolResultPart, ToolUsePart
from loopd.protocol.model import ModelRequest
from loopd.providers.anthropic import AnthropicProvider
from loopd.store.sqlite import SessionRecord, SqliteStore
from loopd.testing.fakes import FakeClock, FakeToolBox, MemoryJournal, ScriptedPolicy

CHUNKS = 2000
ROUNDS = 7


class FakeServer:
    """`python -m loopd.testing.fake_llm` in a child process."""

    def __init__(self, steps: list[dict[str, Any]], *flags: str) -> None:
        self.dir = tempfile.TemporaryDirectory()
        script = Path(self.dir.name) / "script.json"
        script.write_text(json.dumps({"*": steps}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loopd.testing.fake_llm", "--script", str(script), *flags],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(5)
        self.dir.cleanup()


class StoreEmitter:
    """Journal-then-show, as the session layer does, showing to nobody."""

    def __init__(self, store: SqliteStore, session_id: str) -> None:
        self.store, self.session_id = store, session_id

    async def emit(self, event: SessionEvent) -> None:
        self.store.append_event(self.session_id, to_wire(event))


class Quiet:
    """Shows to nobody: the event is only encoded, as for any editor."""

    async def emit(self, event: SessionEvent) -> None:
        to_wire(event)


class NoApprover:
    async def approve(self, request: object) -> Any:
        raise AssertionError("no approvals in the benchmark")


def engine_for(
    provider: AnthropicProvider, emitter: Any, history: list[Message], journal: Any
) -> Engine:
    ports = EnginePorts(
        provider, FakeToolBox(), emitter, NoApprover(), ScriptedPolicy(), journal, FakeClock()
    )
    # A window that holds the 1,000 prior turns (about 400k tokens): this measures what
    # a long history costs to send, not a compaction (benchmarks/context.py does that).
    config = EngineConfig(model="bench", limits=Limits(), context_window=2_000_000)
    return Engine("bench", config, ports, history)


async def bare_consumer(client: httpx.AsyncClient, base_url: str, prompt: str = "go") -> float:
    """The floor: the reply's events parsed by httpx-sse and `json.loads`, nothing
    else. Returns when the first event came (perf_counter)."""
    body = {
        "model": "bench",
        "max_tokens": 8192,
        "stream": True,
        "messages": [{"role": "user", "content": prompt}],
    }
    first = 0.0
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    async with aconnect_sse(
        client, "POST", f"{base_url}/v1/messages", json=body, headers=headers
    ) as es:
        async for sse in es.aiter_sse():
            json.loads(sse.data)
            first = first or time.perf_counter()
    return first


async def timed(work: Awaitable[Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    await work
    return time.perf_counter() - wall, time.process_time() - cpu


async def streaming_ratio() -> dict[str, float]:
    text = " ".join(f"w{i}" for i in range(CHUNKS))
    server = FakeServer([{"text": text} for _ in range(ROUNDS * 2 + 2)])
    tmp = tempfile.TemporaryDirectory()
    store = SqliteStore(Path(tmp.name) / "bench.db")
    store.create(SessionRecord(id="bench", cwd="/", created_at="0", updated_at="0"))
    client = httpx.AsyncClient(timeout=60)
    provider = AnthropicProvider(api_key="k", base_url=server.base_url, client=client)
    emitter = StoreEmitter(store, "bench")
    prompt = Prompt((TextBlock("go"),))
    subject: list[tuple[float, float]] = []
    baseline: list[tuple[float, float]] = []
    try:
        await bare_consumer(client, server.base_url)  # warm up both paths
        await engine_for(provider, emitter, [], MemoryJournal()).run(prompt)
        for _ in range(ROUNDS):
            baseline.append(await timed(bare_consumer(client, server.base_url)))
            engine = engine_for(provider, emitter, [], MemoryJournal())
            subject.append(await timed(engine.run(prompt)))
    finally:
        await client.aclose()
        server.close()
        store.close()
        tmp.cleanup()
    return _ratios(subject, baseline)


def history(turns: int) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out.append(Message("user", (TextPart(f"question {i} " * 20),)))
        out.append(
            Message(
                "assistant",
                (TextPart("let me look"), ToolUsePart(f"t{i}", "read", {"path": f"/w/{i}.py"})),
            )
        )
        out.append(Message("user", (ToolResultPart(f"t{i}", f"contents of file {i}\n" * 20),)))
        out.append(Message("assistant", (TextPart(f"answer {i} " * 30),)))
    return out


async def history_ratio() -> dict[str, float]:
    server = FakeServer([{"text": "short answer"} for _ in range(ROUNDS * 2 + 2)])
    client = httpx.AsyncClient(timeout=60)
    provider = AnthropicProvider(api_key="k", base_url=server.base_url, client=client)
    small, large = history(10), history(1000)
    prompt = Prompt((TextBlock("next"),))
    subject: list[tuple[float, float]] = []
    baseline: list[tuple[float, float]] = []

    try:
        await engine_for(provider, Quiet(), list(small), MemoryJournal()).run(prompt)
        for _ in range(ROUNDS):
            e_small = engine_for(provider, Quiet(), list(small), MemoryJournal())
            baseline.append(await timed(e_small.run(prompt)))
            e_large = engine_for(provider, Quiet(), list(large), MemoryJournal())
            subject.append(await timed(e_large.run(prompt)))
    finally:
        await client.aclose()
        server.close()
    return _ratios(subject, baseline)


def _ratios(
    subject: list[tuple[float, float]], baseline: list[tuple[float, float]]
) -> dict[str, float]:
    med = statistics.median
    return {
        "subject_wall_ms": med(s[0] for s in subject) * 1000,
        "baseline_wall_ms": med(b[0] for b in baseline) * 1000,
        "wall_ratio": med(s[0] for s in subject) / med(b[0] for b in baseline),
        "subject_cpu_ms": med(s[1] for s in subject) * 1000,
        "baseline_cpu_ms": med(b[1] for b in baseline) * 1000,
        "cpu_ratio": med(s[1] for s in subject) / max(med(b[1] for b in baseline), 1e-9),
    }


async def raw_bytes(client: httpx.AsyncClient, base_url: str) -> None:
    body = {"model": "bench", "max_tokens": 8192, "stream": True,
            "messages": [{"role": "user", "content": "go"}]}  # fmt: skip
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    async with client.stream("POST", f"{base_url}/v1/messages", json=body, headers=headers) as r:
        async for _ in r.aiter_raw():
            pass


async def provider_only(provider: AnthropicProvider) -> None:
    request = ModelRequest("bench", "", (Message("user", (TextPart("go"),)),))
    async for _ in provider.stream(request):
        pass


async def stream_layers() -> dict[str, dict[str, float]]:
    """Each layer of the 2,000-chunk reply against the bare consumer, alternating."""
    text = " ".join(f"w{i}" for i in range(CHUNKS))
    server = FakeServer([{"text": text} for _ in range(6 * (ROUNDS + 1))])
    tmp = tempfile.TemporaryDirectory()
    store = SqliteStore(Path(tmp.name) / "bench.db")
    store.create(SessionRecord(id="bench", cwd="/", created_at="0", updated_at="0"))
    client = httpx.AsyncClient(timeout=60)
    provider = AnthropicProvider(api_key="k", base_url=server.base_url, client=client)
    prompt = Prompt((TextBlock("go"),))

    layers: dict[str, Callable[[], Awaitable[Any]]] = {
        "bare httpx-sse": lambda: bare_consumer(client, server.base_url),
        "bytes only": lambda: raw_bytes(client, server.base_url),
        "provider": lambda: provider_only(provider),
        "engine": lambda: engine_for(provider, Quiet(), [], MemoryJournal()).run(prompt),
        "engine + journal": lambda: engine_for(
            provider, StoreEmitter(store, "bench"), [], MemoryJournal()
        ).run(prompt),
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in layers}
    try:
        for i in range(ROUNDS + 1):  # the first round warms up and is not kept
            for name, layer in layers.items():
                took = await timed(layer())
                if i:
                    times[name].append(took)
    finally:
        await client.aclose()
        server.close()
        store.close()
        tmp.cleanup()
    floor = times.pop("bare httpx-sse")
    return {name: _ratios(subject, floor) for name, subject in times.items()}


def layer_table(layers: Mapping[str, Mapping[str, float]]) -> str:
    floor = next(iter(layers.values()))
    lines = [
        f"{CHUNKS}-chunk reply, medians: CPU ms (x the bare httpx-sse consumer's"
        f" {floor['baseline_cpu_ms']:.1f} ms), wall ms (x its {floor['baseline_wall_ms']:.1f})"
    ]
    lines += [f"  {name:18} CPU {r['subject_cpu_ms']:6.1f} ({r['cpu_ratio']:.2f}x)"
              f"  wall {r['subject_wall_ms']:6.1f} ({r['wall_ratio']:.2f}x)"
              for name, r in layers.items()]  # fmt: skip
    return "\n".join(lines)


def main() -> dict[str, dict[str, float]]:
    return {
        "stream_2000_chunks (engine+store vs bare httpx-sse; target <= 1.15)": asyncio.run(
            streaming_ratio()
        ),
        "turn_cpu_1000_vs_10_prior_turns (target <= 1.5)": asyncio.run(history_ratio()),
        **{f"stream layer: {name} vs bare httpx-sse": r
           for name, r in asyncio.run(stream_layers()).items()},
    }  # fmt: skip


if __name__ == "__main__":
    print(layer_table(asyncio.run(stream_layers())))
