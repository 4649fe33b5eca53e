"""`loopd acp --remote` against the local daemon, side by side in one run: the same
editor (raw NDJSON on the agent's stdio) through a local `loopd acp` (a forwarder to
the daemon) and through `loopd acp --remote` to `loopd serve` on loopback (TLS with
its self-signed certificate, the token, the same daemon behind it), the model the
loopback fake.

Measured per round, on sessions already open: prompt to the first
`agent_message_chunk` of a short reply of the native runtime, and prompt to the
answer of a reply of 2,000 chunks (from a scripted ACP child, `loopd.testing.
scripted_acp`: the native engine shows deltas that arrive together as one chunk, so
a fast model's 2,000 deltas reach the editor as a few dozen). Rounds alternate between
the two, so drift hits both alike; each figure is a median, and the ratios are
remote over local.

    python -m benchmarks.remote [ROUNDS]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.acp_start import agent_env
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply

ROUNDS = 5
LOOPD = [sys.executable, "-m", "loopd"]
FLOOD = 2000


class Editor:
    """An ACP client on an agent's stdio: requests in, lines out."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc, self.next = proc, 0

    async def request(
        self, method: str, params: dict[str, Any]
    ) -> tuple[dict[str, Any], float, int]:
        """The answer, seconds to the first message chunk, and the chunks seen."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        start = time.perf_counter()
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()
        first, chunks = float("nan"), 0
        while True:
            raw = await asyncio.wait_for(self.proc.stdout.readline(), 300)
            assert raw, "the agent closed stdout"
            message = json.loads(raw)
            if message.get("method") == "session/update":
                if message["params"]["update"]["sessionUpdate"] == "agent_message_chunk":
                    chunks += 1
                    if chunks == 1:
                        first = time.perf_counter() - start
            elif message.get("id") == self.next and "method" not in message:
                return message, first, chunks


async def editor(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[Editor, str, str]:
    """An initialized editor with a native session and a scripted one."""
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, cwd=cwd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, limit=16 << 20,
    )  # fmt: skip
    agent = Editor(proc)
    await agent.request("initialize", {"protocolVersion": 1})
    sessions = []
    for _ in range(2):
        new, _, _ = await agent.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        sessions.append(new["result"]["sessionId"])
    option = {"sessionId": sessions[1], "configId": "runtime", "value": "scripted"}
    answer, _, _ = await agent.request("session/set_config_option", option)
    assert "result" in answer, answer
    return agent, sessions[0], sessions[1]


def scripted_runtime(home: Path) -> None:
    """A config whose `scripted` runtime answers every prompt with `FLOOD` chunks."""
    script = home / "script.json"
    turns = [[{"say": "w ", "times": FLOOD}]]
    script.write_text(json.dumps({"log": str(home / "child.jsonl"), "turns": turns}))
    config = home / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    args = ["-m", "loopd.testing.scripted_acp", str(script)]
    config.write_text(
        '[runtimes.scripted]\nharness = "acp"\n'
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
    )


async def measure(home: Path, rounds: int) -> dict[str, float]:
    work = home / "work"
    work.mkdir()
    scripted_runtime(home)
    with FakeLLMServer() as fake:
        env = agent_env(home, os.environ.get("PATH", "/usr/bin:/bin"))
        env |= {"ANTHROPIC_BASE_URL": fake.base_url, "LOOPD_DAEMON": "on"}
        token = await _output([*LOOPD, "serve", "token"], env)
        server = await asyncio.create_subprocess_exec(
            *LOOPD, "serve", "--listen", "127.0.0.1:0", "--root", str(work), env=env,
            stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            url, fingerprint = await _announced(server)
            remote = [*LOOPD, "acp", "--remote", url, "--fingerprint", fingerprint]
            contenders = {
                "local": await editor([*LOOPD, "acp"], env, work),
                "remote": await editor(remote, env | {"LOOPD_REMOTE_TOKEN": token}, work),
            }
            figures: dict[str, list[float]] = {}
            for _ in range(rounds):
                for name, (agent, native, scripted) in contenders.items():
                    for label, sid in (("first chunk", native), ("2000 chunks", scripted)):
                        fake.script("*", Reply(text="hello there"))
                        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
                        start = time.perf_counter()
                        _, first, chunks = await agent.request("session/prompt", prompt)
                        took = first if label == "first chunk" else time.perf_counter() - start
                        figures.setdefault(f"{name} {label} s", []).append(took)
                        figures.setdefault(f"{name} chunks", []).append(chunks)
            for agent, _, _ in contenders.values():
                assert agent.proc.stdin is not None
                agent.proc.stdin.close()
                await agent.proc.wait()
        finally:
            server.terminate()
            await server.wait()
            await _output([*LOOPD, "daemon", "stop"], env)
    f = {k: statistics.median(v) for k, v in figures.items()}
    f["first chunk remote/local"] = f["remote first chunk s"] / f["local first chunk s"]
    f["2000 chunks remote/local"] = f["remote 2000 chunks s"] / f["local 2000 chunks s"]
    return f


async def _output(argv: list[str], env: dict[str, str]) -> str:
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    out, _ = await proc.communicate()
    return out.decode().strip()


async def _announced(server: asyncio.subprocess.Process) -> tuple[str, str]:
    assert server.stderr is not None
    said = ""
    while "loopd serve: roots" not in said:
        line = (await asyncio.wait_for(server.stderr.readline(), 120)).decode()
        assert line, f"loopd serve exited: {said}"
        said += line
    asyncio.get_running_loop().create_task(_drain(server.stderr))
    url, fingerprint = re.search(r"listening on (\S+)", said), re.search(r"fingerprint (\S+)", said)
    assert url is not None and fingerprint is not None
    return url.group(1), fingerprint.group(1)


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


def main(rounds: int = ROUNDS) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        f = asyncio.run(measure(Path(tmp).resolve(), rounds))
    print(
        f"remote ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, {rounds} rounds):\n"
        f"  first chunk: local {f['local first chunk s'] * 1e3:.0f} ms,"
        f" remote {f['remote first chunk s'] * 1e3:.0f} ms:"
        f" {f['first chunk remote/local']:.2f}x\n"
        f"  2,000-chunk reply: local {f['local 2000 chunks s'] * 1e3:.0f} ms"
        f" ({f['local chunks']:.0f} chunks), remote {f['remote 2000 chunks s'] * 1e3:.0f} ms"
        f" ({f['remote chunks']:.0f} chunks): {f['2000 chunks remote/local']:.2f}x"
    )
    return {"remote against local": f}


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)
