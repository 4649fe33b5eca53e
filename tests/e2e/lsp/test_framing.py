"""Raw bytes against a real `loopd lsp`: no framing mistake stops it answering.

Each attack is written to the server's stdin as an attacker (or a buggy client)
would, followed by valid requests; the server must answer a parse error for the bad
frame where one is due, then answer the valid request, and still be running."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import isolated_env

pytestmark = pytest.mark.e2e

BOUND = 30.0


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def request(msg_id: int, method: str = "loopd/session/list", params: Any = None) -> bytes:
    return frame({"id": msg_id, "method": method, "params": params or {}})


BODY = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "loopd/session/list", "params": {}})
ATTACKS: dict[str, bytes] = {
    "short_length": b"Content-Length: 5\r\n\r\n" + BODY.encode(),
    "long_length": b"Content-Length: 400\r\n\r\n" + BODY.encode(),
    "negative_length": b"Content-Length: -5\r\n\r\n" + BODY.encode(),
    "zero_length": b"Content-Length: 0\r\n\r\n",
    "non_numeric_length": b"Content-Length: abc\r\n\r\n" + BODY.encode(),
    "huge_length": b"Content-Length: 999999999999\r\n\r\n" + BODY.encode(),
    "missing_length": b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + BODY.encode(),
    "duplicate_length": b"Content-Length: 10\r\nContent-Length: %d\r\n\r\n%s"
    % (len(BODY), BODY.encode()),
    "bare_lf": b"Content-Length: %d\n\n%s" % (len(BODY), BODY.encode()),
    "garbage_line": b"hello there\r\n",
    "header_over_1mib": b"X-Junk: " + b"a" * (3 << 20) + b"\r\n\r\n",
    "header_over_1mib_no_newline": b"a" * (3 << 20),
    "not_json": b"Content-Length: 5\r\n\r\nhello",
    "not_an_object": frame({"x": 1})[:0] + b"Content-Length: 7\r\n\r\n[1,2,3]",
    "no_jsonrpc_version": b'Content-Length: 13\r\n\r\n{"id":3,"m":1}',
}


class Lsp:
    """A `loopd lsp` subprocess spoken to in raw bytes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        assert proc.stdin is not None and proc.stdout is not None
        self.stdin, self.stdout = proc.stdin, proc.stdout

    async def write(self, data: bytes) -> None:
        self.stdin.write(data)
        await self.stdin.drain()

    async def read(self) -> dict[str, Any]:
        length = 0
        while (line := await self.stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        assert length, "the server closed its stdout"
        message: dict[str, Any] = json.loads(await self.stdout.readexactly(length))
        return message

    async def until_id(self, msg_id: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The response to `msg_id`, and what came before it."""
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(BOUND):
            while (message := await self.read()).get("id") != msg_id or "method" in message:
                seen.append(message)
        return message, seen


@asynccontextmanager
async def loopd_lsp(tmp_path: Path, **extra: str) -> AsyncIterator[Lsp]:
    (tmp_path / "ws").mkdir()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "loopd",
        "lsp",
        cwd=tmp_path / "ws",
        env=isolated_env(tmp_path, None, **extra),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=1 << 20,
    )
    lsp = Lsp(proc)
    try:
        params = {"processId": None, "rootUri": None, "capabilities": {}}
        await lsp.write(request(1, "initialize", params))
        init, _ = await lsp.until_id(1)
        assert "result" in init
        await lsp.write(frame({"method": "initialized", "params": {}}))
        yield lsp
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def test_after_every_bad_frame_the_next_request_is_answered(tmp_path: Path) -> None:
    """All attacks in a row on one server: each is answered with a parse error (or,
    for a bare LF, read as the valid frame it is) and the server resyncs."""
    async with loopd_lsp(tmp_path) as lsp:
        msg_id = 100
        for attack, data in ATTACKS.items():
            await lsp.write(data)
            for _ in range(5):  # a too-long length takes in what follows
                msg_id += 1
                await lsp.write(request(msg_id))
            answer, before = await lsp.until_id(msg_id)
            assert answer.get("result") == {"sessions": []}, (attack, answer)
            errors = [m for m in before if "error" in m]
            if attack != "bare_lf":
                assert errors, f"no error answered for {attack}"
            for error in errors:
                assert error["error"]["code"] in (-32700, -32600), (attack, error)
                assert error["id"] is None, (attack, error)
        assert lsp.proc.returncode is None


async def test_requests_after_shutdown_are_invalid_and_exit_ends_the_server(
    tmp_path: Path,
) -> None:
    async with loopd_lsp(tmp_path) as lsp:
        await lsp.write(request(2, "shutdown", None))
        done, _ = await lsp.until_id(2)
        assert done["result"] is None
        await lsp.write(request(3))
        refused, _ = await lsp.until_id(3)
        assert refused["error"]["code"] == -32600
        await lsp.write(frame({"method": "exit"}))
        assert await asyncio.wait_for(lsp.proc.wait(), BOUND) == 0


DEEP = {
    "array": b"[" * 100_000 + b"]" * 100_000,
    "object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
}


@pytest.mark.parametrize("shape", sorted(DEEP))
@pytest.mark.parametrize("daemon", ["off", "on"], ids=["in-process", "daemon"])
async def test_json_nested_thousands_deep_is_a_parse_error_and_the_connection_lives(
    tmp_path: Path, daemon: str, shape: str
) -> None:
    """The decoder's recursion used to end the connection (RecursionError)."""
    try:
        async with loopd_lsp(tmp_path, LOOPD_DAEMON=daemon) as lsp:
            body = b'{"jsonrpc":"2.0","id":5,"method":"loopd/session/list","params":%s}'
            deep = body % DEEP[shape]
            await lsp.write(b"Content-Length: %d\r\n\r\n%s" % (len(deep), deep))
            await lsp.write(request(6))
            answer, before = await lsp.until_id(6)
            assert answer.get("result") == {"sessions": []}
            errors = [m["error"] for m in before if "error" in m]
            assert [e["code"] for e in errors] == [-32700]
            assert "deep" in errors[0]["message"]
    finally:
        if daemon == "on":
            env = isolated_env(tmp_path, None, LOOPD_DAEMON="on")
            stop = [sys.executable, "-m", "loopd", "daemon", "stop"]
            proc = await asyncio.create_subprocess_exec(*stop, env=env)
            await proc.wait()


def answered_ids(out: bytes) -> set[Any]:
    """The ids of the answers in an LSP byte stream."""
    ids = set()
    while out:
        header, _, rest = out.partition(b"\r\n\r\n")
        [length] = [h for h in header.split(b"\r\n") if h.startswith(b"Content-Length:")]
        size = int(length.split(b":")[1])
        message = json.loads(rest[:size])
        out = rest[size:]
        if "method" not in message:
            ids.add(message.get("id"))
    return ids


@pytest.mark.parametrize("daemon", ["off", "on"], ids=["in-process", "daemon"])
def test_requests_written_before_stdin_closes_are_answered(tmp_path: Path, daemon: str) -> None:
    """`printf '…' | loopd lsp`: the requests come with the end of the input; each is
    answered before the process exits (through the daemon they were dropped)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = isolated_env(tmp_path, None, LOOPD_DAEMON=daemon, ANTHROPIC_API_KEY="x")
    hello = {"processId": None, "rootUri": None, "capabilities": {"experimental": {"loopd": True}}}
    given = b"".join([
        request(1, "initialize", hello),
        frame({"method": "initialized", "params": {}}),
        request(2, "loopd/session/new", {"cwd": str(ws), "mcpServers": []}),
        request(3),
    ])  # fmt: skip
    try:
        done = subprocess.run(
            [sys.executable, "-m", "loopd", "lsp"], input=given, capture_output=True,
            env=env, cwd=ws, timeout=60,
        )  # fmt: skip
    finally:
        if daemon == "on":
            stop = [sys.executable, "-m", "loopd", "daemon", "stop"]
            subprocess.run(stop, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert answered_ids(done.stdout) == {1, 2, 3}, done.stdout
