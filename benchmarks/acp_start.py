"""ACP start-up: spawn-to-`initialize`-response and `session/new`, for `loopd acp`
and for `echo_agent` (a minimal agent on the same ACP SDK), in the same run.

Target: `loopd acp` answers initialize within 1.5x of the echo agent. Both run with
a throwaway home (no user config); loopd's runtime is the native one on Anthropic
(nothing is called: no prompt is sent). Rounds alternate between the two agents so
drift hits both alike.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

ROUNDS = 7
ECHO = [sys.executable, str(Path(__file__).with_name("echo_agent.py"))]
LOOPD = [sys.executable, "-m", "loopd", "acp"]


def _send(stdin: IO[str], rid: int, method: str, params: dict[str, Any]) -> None:
    stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
    stdin.write("\n")
    stdin.flush()


def _answer(stdout: IO[str], rid: int) -> dict[str, Any]:
    while line := stdout.readline():
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == rid and "method" not in message:
            if "error" in message:
                raise RuntimeError(f"the agent failed: {message['error']}")
            return message
    raise RuntimeError("the agent closed stdout before answering")


def agent_env(home: Path, path: str) -> dict[str, str]:
    """A throwaway home for an agent: no user config, nothing of the person's."""
    return {
        "PATH": path,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "LOOPD_HOME": str(home / "data"),
        "ANTHROPIC_API_KEY": "unused",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


def _once(argv: list[str], home: Path) -> tuple[float, float]:
    """Seconds from spawn to the initialize response, and for one session/new."""
    env = agent_env(home, os.environ.get("PATH", "/usr/bin:/bin"))
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=home
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _send(proc.stdin, 1, "initialize", {"protocolVersion": 1})
        _answer(proc.stdout, 1)
        initialized = time.perf_counter()
        _send(proc.stdin, 2, "session/new", {"cwd": str(home), "mcpServers": []})
        _answer(proc.stdout, 2)
        opened = time.perf_counter()
    finally:
        proc.stdin.close()
        proc.wait(30)
    return initialized - start, opened - initialized


def main() -> dict[str, dict[str, float]]:
    loopd: list[tuple[float, float]] = []
    echo: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp).resolve()
        for _ in range(ROUNDS):
            echo.append(_once(ECHO, home))
            loopd.append(_once(LOOPD, home))
    li, ei = (statistics.median(r[0] for r in rows) for rows in (loopd, echo))
    ln, en = (statistics.median(r[1] for r in rows) for rows in (loopd, echo))
    return {
        "spawn to initialize response, loopd acp vs echo agent (target ratio <= 1.5)": {
            "subject_ms": li * 1000,
            "baseline_ms": ei * 1000,
            "ratio": li / ei,
        },
        "session/new after initialize, loopd acp vs echo agent": {
            "subject_ms": ln * 1000,
            "baseline_ms": en * 1000,
        },
    }
