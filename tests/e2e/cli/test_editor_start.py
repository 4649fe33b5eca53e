"""How `loopd acp` and `loopd lsp` start: `initialize` is answered while the app is
still being built, and each frontend loads only its own protocol stack.

The import rules are checked on the real processes through a whole session
(initialize, a new session, a prompt answered by the fake model, exit): a
`sitecustomize` on the child's PYTHONPATH writes `sys.modules` at exit. The slow
start is a configured runtime whose `--version` blocks on a FIFO until the test
writes to it, so "still building" is a fact, not a race.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, home, prompt_params, raw_loopd

pytestmark = pytest.mark.e2e
__all__ = ["home"]  # the fixture

SITECUSTOMIZE = """\
import atexit, json, os, sys
def _dump():
    with open(os.environ["LOOPD_TEST_MODULES"], "w") as out:
        json.dump(sorted(sys.modules), out)
atexit.register(_dump)
"""
LSP_STACK = ("pygls", "lsprotocol")
ACP_STACK = ("acp",)


def hooked_env(home: Home, hook: Path) -> dict[str, str]:
    """`home.env()` with the `sys.modules` dump; its file is `hook / "modules.json"`."""
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = home.env(LOOPD_TEST_MODULES=str(hook / "modules.json"))
    env["PYTHONPATH"] = os.pathsep.join([str(hook), env["PYTHONPATH"]])
    return env


def loaded(hook: Path, stacks: tuple[str, ...]) -> list[str]:
    """The modules of `stacks` the process had imported when it exited."""
    modules: list[str] = json.loads((hook / "modules.json").read_text())
    return [m for m in modules if m.split(".")[0] in stacks]


@dataclass
class RawLsp:
    """`loopd lsp` as a subprocess, spoken to in LSP frames."""

    proc: asyncio.subprocess.Process
    next_id: int = 0

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await self.proc.stdin.drain()

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = None
        while (line := await self.proc.stdout.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None, "loopd lsp closed stdout"
        message: dict[str, Any] = json.loads(await self.proc.stdout.readexactly(length))
        return message

    async def start(self, method: str, params: Any) -> int:
        self.next_id += 1
        await self.send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    async def answer(self, rid: int) -> dict[str, Any]:
        """The response to `rid`; other messages on the way are dropped."""
        while True:
            message = await asyncio.wait_for(self.recv(), 30)
            if message.get("id") == rid and "method" not in message:
                return message

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        return await self.answer(await self.start(method, params))

    async def initialize(self, root: Path) -> dict[str, Any]:
        params = {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
        return await self.request("initialize", params)

    async def exit(self) -> int:
        assert (await self.request("shutdown", None))["result"] is None
        await self.send({"method": "exit"})
        return await asyncio.wait_for(self.proc.wait(), 30)


@asynccontextmanager
async def raw_lsp(home: Home, env: dict[str, str]) -> AsyncIterator[RawLsp]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "loopd",
        "lsp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
        cwd=home.work,
    )
    try:
        yield RawLsp(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def test_loopd_acp_never_imports_the_lsp_stack(home: Home, tmp_path: Path) -> None:
    home.fake.script("*", Reply(text="hello"))
    hook = tmp_path / "hook"
    async with raw_loopd(home, hooked_env(home, hook)) as agent:
        sid = await agent.new_session(home.work)
        done, _ = await agent.request("session/prompt", prompt_params(sid, "hi"))
        assert done["result"]["stopReason"] == "end_turn"
        assert agent.proc.stdin is not None
        agent.proc.stdin.close()
        assert await asyncio.wait_for(agent.proc.wait(), 30) == 0
    assert loaded(hook, ACP_STACK), "the hook saw the ACP SDK: it works"
    assert loaded(hook, LSP_STACK) == []


async def test_loopd_lsp_never_imports_the_acp_sdk(home: Home, tmp_path: Path) -> None:
    home.fake.script("*", Reply(text="hello"))
    hook = tmp_path / "hook"
    async with raw_lsp(home, hooked_env(home, hook)) as lsp:
        await lsp.initialize(home.work)
        await lsp.send({"method": "initialized", "params": {}})
        new = await lsp.request("loopd/session/new", {"cwd": str(home.work), "mcpServers": []})
        sid = new["result"]["sessionId"]
        done = await lsp.request("loopd/session/prompt", prompt_params(sid, "hi"))
        assert done["result"]["stopReason"] == "end_turn"
        assert await lsp.exit() == 0
    assert loaded(hook, LSP_STACK), "the hook saw pygls: it works"
    assert loaded(hook, ACP_STACK) == []


def slow_runtime(home: Home) -> Path:
    """A user-configured runtime whose `--version` waits for a line on the returned
    FIFO: until then, loopd's catalog discovery cannot finish (but for the probe's
    timeout: the file `probed` says the line came)."""
    gate = home.root / "gate"
    os.mkfifo(gate)
    cli = home.root / "slow-cli"
    done = home.root / "probed"  # only when the line came: not after a probe timeout
    cli.write_text(f'#!/bin/sh\nread line < "{gate}" && touch "{done}"\necho 1.0.0\n')
    cli.chmod(0o755)
    config = home.root / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[runtimes.slow]\nharness = "claude"\ncommand = "{cli}"\n')
    return gate


def release(gate: Path) -> int:
    """Let the probe go on; close the returned descriptor once it has read."""
    fd = os.open(gate, os.O_RDWR | os.O_NONBLOCK)  # RDWR: no waiting for the reader
    os.write(fd, b"go\n")
    return fd


async def test_loopd_lsp_answers_initialize_while_the_app_builds(home: Home) -> None:
    gate = slow_runtime(home)
    async with raw_lsp(home, home.env()) as lsp:
        init = await lsp.initialize(home.work)
        assert init["result"]["serverInfo"]["name"] == "loopd"
        assert "loopd" in init["result"]["capabilities"]["experimental"]
        await lsp.send({"method": "initialized", "params": {}})
        pending = await lsp.start("loopd/session/list", {})
        listing = asyncio.ensure_future(lsp.answer(pending))
        fd = release(gate)  # the build could not have finished before this
        assert (await listing)["result"]["sessions"] == []
        os.close(fd)
        assert (home.root / "probed").exists(), "the build waited for the release"
        assert await lsp.exit() == 0


async def test_loopd_acp_answers_initialize_while_the_app_builds(home: Home) -> None:
    gate = slow_runtime(home)
    async with raw_loopd(home) as agent:
        await agent.initialized()
        await agent.send({"id": 7, "method": "session/list", "params": {}})
        listing = asyncio.ensure_future(agent.until_response(7))
        fd = release(gate)
        response, _ = await listing
        os.close(fd)
        assert (home.root / "probed").exists(), "the build waited for the release"
        assert response["result"] == {"sessions": []}


async def test_loopd_lsp_that_cannot_start_answers_every_request_with_why(home: Home) -> None:
    config = home.root / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("this is = = not toml\n")
    async with raw_lsp(home, home.env()) as lsp:
        assert "result" in await lsp.initialize(home.work)
        for _ in range(2):  # and the server stays up
            failed = await lsp.request("loopd/session/list", {})
            assert failed["error"]["code"] == -32603
            assert "loopd could not start" in failed["error"]["message"]
            assert "not valid TOML" in failed["error"]["message"]
        assert await lsp.exit() == 0
