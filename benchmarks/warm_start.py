"""Warm start, side by side in one run: `loopd acp` cold (no daemon running), warm
(its daemon running) and `--no-daemon`, against the ACP SDK's minimal echo agent
(`echo_agent.py`) and Zed's Node adapter for Claude Code
(`@agentclientprotocol/claude-agent-acp` from tests/clients, driving the pinned
Claude Code CLI), every model request answered by the loopback fake.

Measured per start: spawn to `initialize` answered; spawn to session ready
(`initialize` + `session/new`); prompt to its request reaching the fake model (the
hot path; a count of tokens does not count) and to the first `agent_message_chunk`;
a second prompt whose reply is a `LONG`-chunk stream, from prompt to its answer,
and the CPU the agent's process tree (and daemon) used meanwhile (for cold, that is
the new daemon's first long reply; the echo agent asks no model and has none);
stdin closed to exit; and the peak memory of the whole process tree (summed RSS
sampled from /proc; for loopd's daemon modes the daemon and its children count
too). Every figure is a median over rounds that alternate between the contenders,
so drift hits all alike; targets are ratios to baselines measured in the same run
(issue 16). Also `loopd lsp` against `loopd acp`, spawn to `initialize`, in the
same mode. And, in each round, the floor of the long reply: a bare httpx-sse
consumer of the same stream from the same fake (`benchmarks.turn.bare_consumer`),
against which each contender's long reply is given as a ratio (issue 25).

Where this build has no daemon (`loopd daemon` unknown), the cold and warm rows run
the in-process `loopd acp` and the table says so.

The figures, the targets and the table: `benchmarks.warm_report`.

    python -m benchmarks.warm_start [ROUNDS]
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from benchmarks.acp_start import ECHO, agent_env
from benchmarks.memory import TreeMemory, daemon_pids, tree_cpu
from benchmarks.startup import lsp_initialize
from benchmarks.turn import bare_consumer
from benchmarks.warm_report import LONG, Figures, Start, floor_ratios, table, targets
from loopd.testing.fake_llm import COUNT_TOKENS, FakeLLMServer, RecordedRequest
from loopd.testing.llm_script import Reply

ROUNDS = 5
TIMEOUT = 120.0  # seconds one start may take before it is killed and reported
ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ROOT / "tests" / "clients" / "node_modules" / ".bin"
SCRIPT = Path(sys.executable).with_name("loopd")  # the console script editors run
LOOPD = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "loopd"]
ADAPTER_ENV = {  # as tests/e2e/acp_runtime/test_claude_agent_acp.py gives it
    "CLAUDE_CODE_EXECUTABLE": str(CLIENTS / "claude"),
    "CLAUDE_CODE_MAX_RETRIES": "0",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
LONG_PROMPT = "go on at length"  # the fake answers a request whose last message has it
LONG_TEXT = " ".join(f"w{i}" for i in range(LONG))


@dataclass(frozen=True, slots=True)
class Contender:
    name: str
    argv: tuple[str, ...]
    daemon: bool = False  # a loopd forwarder: the daemon counts in its memory
    before: Callable[[], None] = lambda: None  # run before each start (stop the daemon)
    env: Mapping[str, str] = field(default_factory=dict)  # on top of the shared one


class Agent:
    """One spawned ACP agent, driven over raw NDJSON (no SDK in the way)."""

    def __init__(self, argv: tuple[str, ...], env: Mapping[str, str], cwd: Path) -> None:
        self.log = cwd / "stderr.log"
        with self.log.open("ab") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env, cwd=cwd
            )
        self.next_id = 0
        self._watchdog = threading.Timer(TIMEOUT, self.proc.kill)
        self._watchdog.start()

    @property
    def stdin(self) -> IO[bytes]:
        assert self.proc.stdin is not None
        return self.proc.stdin

    @property
    def stdout(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.stdin.write(json.dumps(message).encode() + b"\n")
        self.stdin.flush()
        return self.next_id

    def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Read messages until `done` says one is what was awaited (the agent's own
        requests on the way are refused: nothing here should ask)."""
        while line := self.stdout.readline():
            message: dict[str, Any] = json.loads(line)
            if done(message):
                return message
            if "method" in message and "id" in message:
                error = {"code": -32601, "message": "the benchmark answers nothing"}
                reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                self.stdin.write(json.dumps(reply).encode() + b"\n")
                self.stdin.flush()
        raise RuntimeError(f"the agent closed stdout; its stderr: {self._stderr()}")

    def answer(self, rid: int) -> dict[str, Any]:
        message = self.until(lambda m: m.get("id") == rid and "method" not in m)
        if "error" in message:
            raise RuntimeError(f"the agent failed: {message['error']}; {self._stderr()}")
        result: dict[str, Any] = message["result"]
        return result

    def close(self) -> float:
        """Seconds from closing stdin to the process's exit."""
        start = time.perf_counter()
        self.stdin.close()
        self.proc.wait()
        elapsed = time.perf_counter() - start
        self._watchdog.cancel()
        return elapsed

    def _stderr(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]


def first_chunk(message: dict[str, Any]) -> bool:
    if message.get("method") != "session/update":
        return False
    return bool(message["params"]["update"].get("sessionUpdate") == "agent_message_chunk")


class StampedFake(FakeLLMServer):
    """The fake model, noting when each request arrives (on this process's clock).
    A request whose last message holds `LONG_PROMPT` is answered `LONG_TEXT`, one
    word a chunk; every other, with a short text."""

    def __init__(self) -> None:
        short, long = Reply(text="hello from the fake model"), Reply(text=LONG_TEXT)

        def answer(request: RecordedRequest) -> Reply:
            last = (request.body.get("messages") or [{}])[-1]
            return long if LONG_PROMPT in json.dumps(last) else short

        super().__init__(responder=answer)
        self.arrivals: list[tuple[float, str]] = []

    def record(self, request: RecordedRequest) -> None:
        self.arrivals.append((time.perf_counter(), request.path))
        super().record(request)

    def model_request_after(self, since: float) -> float:
        """When the first request for a reply (not a token count) came after `since`."""
        replies = (t for t, path in list(self.arrivals) if t >= since and COUNT_TOKENS not in path)
        return next(replies, math.nan)


def one_start(contender: Contender, env: Mapping[str, str], work: Path, fake: StampedFake) -> Start:
    contender.before()
    start = time.perf_counter()
    agent = Agent(contender.argv, env, work)
    daemons: list[int] = []
    memory = TreeMemory(lambda: [agent.proc.pid, *daemons])
    with memory.sampling():
        try:
            agent.answer(agent.request("initialize", {"protocolVersion": 1}))
            initialized = time.perf_counter()
            new = agent.answer(agent.request("session/new", {"cwd": str(work), "mcpServers": []}))
            ready = time.perf_counter()
            if contender.daemon:  # found now, outside the timed spans
                daemons += daemon_pids(env["LOOPD_HOME"], exclude=agent.proc.pid)
            sid = new["sessionId"]
            prompt = [{"type": "text", "text": "hi"}]
            asked = time.perf_counter()
            agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
            agent.until(first_chunk)
            chunked = time.perf_counter()
            agent.until(lambda m: m.get("id") == agent.next_id and "method" not in m)
            cpu = tree_cpu([agent.proc.pid, *daemons])
            long_reply = _long_reply(agent, sid, fake)
            long_cpu = tree_cpu([agent.proc.pid, *daemons]) - cpu
            memory.sample()
        finally:
            exited = agent.close()
    to_model = fake.model_request_after(asked) - asked
    first = chunked - asked
    return Start(initialized - start, ready - start, to_model, first, long_reply, long_cpu,
                 exited, memory.peak)  # fmt: skip


def _long_reply(agent: Agent, sid: str, fake: StampedFake) -> float:
    """Seconds from the long prompt to its answer; nan when no model was asked."""
    prompt = [{"type": "text", "text": LONG_PROMPT}]
    asked = time.perf_counter()
    rid = agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
    agent.until(lambda m: m.get("id") == rid and "method" not in m)
    answered = time.perf_counter() - asked
    return math.nan if math.isnan(fake.model_request_after(asked)) else answered


def floor_once(base_url: str) -> tuple[float, float]:
    """Seconds for a bare httpx-sse consumer to read the long reply, and its CPU
    seconds. In a process of its own, as every contender is: in this one it would
    share the interpreter lock with the fake's thread."""
    code = f"from benchmarks.warm_start import _floor; _floor({base_url!r})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT, check=True, cwd=ROOT)  # fmt: skip
    wall, cpu = json.loads(done.stdout)
    return float(wall), float(cpu)


def _floor(base_url: str) -> None:
    """After a short reply (what its first request loads is not counted, as a warm
    daemon has it loaded), the long one on a new client, so its connection is
    counted, as a first prompt's is."""

    async def read() -> tuple[float, float]:
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            await bare_consumer(client, base_url)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            start, cpu = time.perf_counter(), time.process_time()
            await bare_consumer(client, base_url, LONG_PROMPT)
            return time.perf_counter() - start, time.process_time() - cpu

    print(json.dumps(asyncio.run(read())))


def lsp_start(argv: tuple[str, ...], env: Mapping[str, str], work: Path) -> float:
    """Seconds from spawn to `initialize` answered by `loopd lsp`."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env, cwd=work,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        lsp_initialize(proc.stdin, proc.stdout)
        return time.perf_counter() - start
    finally:
        proc.stdin.close()
        proc.wait(TIMEOUT)


def has_daemon(env: Mapping[str, str]) -> bool:
    """Whether this build's loopd has a daemon (`loopd daemon status` is a command)."""
    done = subprocess.run(
        [*LOOPD, "daemon", "status"], env=env, capture_output=True, text=True, timeout=60
    )
    return "invalid choice" not in done.stderr


def stop_daemon(env: Mapping[str, str]) -> None:
    subprocess.run([*LOOPD, "daemon", "stop"], env=env, capture_output=True, timeout=60)


def contenders(env: Mapping[str, str], daemon: bool) -> list[Contender]:
    """Cold runs first in each round and leaves its daemon running for warm."""
    acp = (*LOOPD, "acp")
    stop = (lambda: stop_daemon(env)) if daemon else (lambda: None)
    return [
        Contender("loopd cold", acp, daemon, stop),
        Contender("loopd warm", acp, daemon),
        Contender("loopd --no-daemon", (*acp, "--no-daemon") if daemon else acp),
        Contender("echo agent", tuple(ECHO)),
        Contender("claude-agent-acp", (str(CLIENTS / "claude-agent-acp"),), env=ADAPTER_ENV),
    ]


def lsp_modes(env: Mapping[str, str], daemon: bool) -> list[Contender]:
    """`loopd lsp` in each mode, named after the acp row it is compared with: cold
    (a daemon starts, and loads the LSP stack), warm (that daemon), --no-daemon."""
    lsp = (*LOOPD, "lsp")
    if not daemon:
        return [Contender("loopd --no-daemon", lsp)]
    return [
        Contender("loopd cold", lsp, daemon, lambda: stop_daemon(env)),
        Contender("loopd warm", lsp, daemon),
        Contender("loopd --no-daemon", (*lsp, "--no-daemon")),
    ]


@contextmanager
def throwaway() -> Iterator[tuple[dict[str, str], Path, StampedFake]]:
    """A private home, the fake model answering every request with text, and the
    environment every contender shares (`agent_env`: no user config)."""
    fake = StampedFake()
    with tempfile.TemporaryDirectory() as tmp, fake:
        home = Path(tmp).resolve()
        work = home / "work"
        work.mkdir()
        path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
        env = agent_env(home, path) | {"ANTHROPIC_BASE_URL": fake.base_url}
        yield env, work, fake


def measure(rounds: int = ROUNDS) -> tuple[Figures, bool]:
    figures = Figures()
    with throwaway() as (env, work, fake):
        daemon = has_daemon(env)
        subjects = contenders(env, daemon)
        try:
            for i in range(rounds + 1):  # the first round warms caches and is not kept
                for c in subjects:
                    start = one_start(c, {**env, **c.env}, work, fake)
                    if i:
                        figures.starts.setdefault(c.name, []).append(start)
                for c in lsp_modes(env, daemon):
                    c.before()
                    took = lsp_start(c.argv, env, work)
                    if i:
                        figures.lsp.setdefault(c.name, []).append(took)
                took, cpu = floor_once(fake.base_url)
                if i:
                    figures.floor.append(took)
                    figures.floor_cpu.append(cpu)
        finally:
            if daemon:
                stop_daemon(env)
    return figures, daemon


def main(rounds: int = ROUNDS) -> dict[str, dict[str, float]]:
    figures, daemon = measure(rounds)
    print(table(figures, daemon))
    floor = {f"{name} long reply vs bare httpx-sse": {"wall_ratio": w, "cpu_ratio": c}
             for name, (w, c) in floor_ratios(figures).items()}  # fmt: skip
    return {t.title: t.figures(figures) for t in targets(daemon)} | floor


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)
