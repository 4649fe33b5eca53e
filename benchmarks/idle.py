"""What an idle daemon holds against what it saves: the daemon's RSS once its last
editor left (after an editor that opened no session, and after one that ran a
turn), against the cold start a running daemon spares the next editor (spawn to
`initialize` + `session/new` answered, no daemon running, against the same with
it running). Medians over rounds that alternate cold and warm, in one run. The
figures behind the idle default (`[daemon] idle_seconds`) and `loopd daemon enable`.

    python -m benchmarks.idle [ROUNDS]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.acp_start import agent_env
from benchmarks.editors import Editor
from benchmarks.load import LOOPD, MB, daemon_pid
from benchmarks.memory import rss
from benchmarks.turn import FakeServer

ROUNDS = 5
SETTLE = 1.0  # seconds for the daemon to close a connection that left


async def start(env: dict[str, str], work: Path, session: bool) -> float:
    """Seconds from spawn to the editor ready (with a session when `session`)."""
    begin = time.perf_counter()
    editor = await Editor.spawn(LOOPD, "acp", env, work)
    if session:
        sid = await editor.new(work)
    ready = time.perf_counter() - begin
    if session:
        await editor.prompt(sid, "hi")
    await editor.close()
    return ready


def stop(env: dict[str, str]) -> None:
    subprocess.run([*LOOPD, "daemon", "stop"], env=env, capture_output=True, timeout=60)


async def measure(root: Path, rounds: int) -> dict[str, float]:
    work = root / "work"
    work.mkdir()
    fake = FakeServer([{"text": "hello from the fake model"} for _ in range(4 * rounds + 2)])
    env = agent_env(root, os.environ.get("PATH", "/usr/bin:/bin"))
    env |= {"LOOPD_DAEMON": "on", "ANTHROPIC_BASE_URL": fake.base_url}
    cold, warm, none, one = [], [], [], []
    try:
        for _ in range(rounds):
            await asyncio.to_thread(stop, env)
            cold.append(await start(env, work, session=False))  # starts the daemon
            await asyncio.sleep(SETTLE)
            none.append(rss(daemon_pid(env)))
            warm.append(await start(env, work, session=False))
            await start(env, work, session=True)
            await asyncio.sleep(SETTLE)
            one.append(rss(daemon_pid(env)))
        cold_session = [await _cold_session(env, work) for _ in range(rounds)]
        warm_session = [await start(env, work, session=True) for _ in range(rounds)]
    finally:
        await asyncio.to_thread(stop, env)
        fake.close()
    return {
        "cold initialize s": statistics.median(cold),
        "warm initialize s": statistics.median(warm),
        "cold session s": statistics.median(cold_session),
        "warm session s": statistics.median(warm_session),
        "idle RSS, no session MB": statistics.median(none) / MB,
        "idle RSS, after one session MB": statistics.median(one) / MB,
    }


async def _cold_session(env: dict[str, str], work: Path) -> float:
    await asyncio.to_thread(stop, env)
    return await start(env, work, session=True)


def main(rounds: int = ROUNDS) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        f = asyncio.run(measure(Path(tmp).resolve(), rounds))
    saved = f["cold session s"] - f["warm session s"]
    print(
        f"idle daemon ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, {rounds} rounds):\n"
        f"  holds {f['idle RSS, no session MB']:.0f} MB after an editor with no session,"
        f" {f['idle RSS, after one session MB']:.0f} MB after one session with a turn\n"
        f"  spawn -> initialize: cold {f['cold initialize s'] * 1e3:.0f} ms,"
        f" warm {f['warm initialize s'] * 1e3:.0f} ms\n"
        f"  spawn -> session ready: cold {f['cold session s'] * 1e3:.0f} ms,"
        f" warm {f['warm session s'] * 1e3:.0f} ms: {saved * 1e3:.0f} ms saved per start"
    )
    return {"idle daemon": f}


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)
