"""Start-up, in the same run: `loopd --version` against a bare interpreter, and
spawn to `initialize` answered for `loopd acp` and `loopd lsp` against the ACP
SDK's minimal echo agent and against `python -c pass`.

Targets: `loopd lsp` answers `initialize` no slower than `loopd acp` (ratio <= 1):
both answer before the app is built. Every process gets a throwaway home (no user
config) with a PATH that holds only the interpreter and the system's tools, so a
CLI installed on this machine (and its `--version` probe) does not count. Rounds
alternate between the subjects so drift hits all alike.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from benchmarks.acp_start import ECHO, agent_env

ROUNDS = 7
LOOPD = [sys.executable, "-m", "loopd"]
BARE = [sys.executable, "-c", "pass"]
Handshake = Callable[[IO[bytes], IO[bytes]], None]


def _acp_initialize(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    stdin.write(json.dumps(request).encode() + b"\n")
    stdin.flush()
    while line := stdout.readline():
        message = json.loads(line)
        if message.get("id") == 1 and "method" not in message:
            if "result" not in message:
                raise RuntimeError(f"no initialize result: {message}")
            return
    raise RuntimeError("the agent closed stdout before answering")


def lsp_initialize(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    params = {"processId": None, "rootUri": None, "capabilities": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body.encode()))
    stdin.flush()
    length = 0
    while (line := stdout.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        length = int(value) if name.lower() == b"content-length" else length
    if "result" not in json.loads(stdout.read(length)):
        raise RuntimeError("loopd lsp did not answer initialize")


def _nothing(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    return None


def _spawn(argv: list[str], home: Path, handshake: Handshake) -> float:
    """Seconds from spawn to the handshake done (for `python -c pass`: to its exit)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    env = agent_env(home, path)
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        handshake(proc.stdin, proc.stdout)
        if handshake is _nothing:
            proc.wait(30)
        return time.perf_counter() - start
    finally:
        proc.stdin.close()
        proc.wait(30)


def _version(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _ratio(subject: list[float], baseline: list[float]) -> dict[str, float]:
    s, b = statistics.median(subject), statistics.median(baseline)
    return {"subject_ms": s * 1000, "baseline_ms": b * 1000, "ratio": s / b}


def main() -> dict[str, dict[str, float]]:
    script = Path(sys.executable).with_name("loopd")  # the console script users run
    subjects: dict[str, tuple[list[str], Handshake]] = {
        "bare": (BARE, _nothing),
        "echo": (ECHO, _acp_initialize),
        "acp": ([*LOOPD, "acp"], _acp_initialize),
        "lsp": ([*LOOPD, "lsp"], lsp_initialize),
    }
    times: dict[str, list[float]] = {name: [] for name in [*subjects, "version"]}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp).resolve()
        for _ in range(ROUNDS):
            for name, (argv, handshake) in subjects.items():
                times[name].append(_spawn(argv, home, handshake))
            times["version"].append(_version([str(script), "--version"]))
    return {
        "loopd --version vs python -c pass": _ratio(times["version"], times["bare"]),
        "spawn to initialize, loopd acp vs echo agent": _ratio(times["acp"], times["echo"]),
        "spawn to initialize, loopd lsp vs echo agent": _ratio(times["lsp"], times["echo"]),
        "spawn to initialize, loopd lsp vs loopd acp (target <= 1)": _ratio(
            times["lsp"], times["acp"]
        ),
        "spawn to initialize, loopd acp vs python -c pass": _ratio(times["acp"], times["bare"]),
        "spawn to initialize, loopd lsp vs python -c pass": _ratio(times["lsp"], times["bare"]),
    }
