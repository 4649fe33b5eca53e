"""Two real `loopd acp` processes on one `LOOPD_HOME`: a session is live in one of
them at a time. The second is refused with a message naming the first; once the
first is gone (it exited, or was killed -9) the second loads it, and the turns in
the store never interleave."""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

import pytest

from loopd.protocol.messages import Message
from loopd.store.sqlite import SqliteStore
from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import ROOT, Home, RawAgent, prompt_params, raw_loopd

pytestmark = pytest.mark.e2e


def apart(home: Home) -> dict[str, str]:
    """Each `loopd acp` in its own process (`--no-daemon`): through one daemon the
    two would share the session, which is the daemon's point."""
    return home.env(LOOPD_DAEMON="off")


def stored(home: Home, sid: str) -> list[Message]:
    store = SqliteStore(home.root / "data" / "sessions.db")
    try:
        return store.messages(sid)
    finally:
        store.close()


async def load(agent: RawAgent, home: Home, sid: str) -> dict[str, Any]:
    await agent.initialized()
    params = {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
    response, _ = await agent.request("session/load", params)
    return response


async def prompted(agent: RawAgent, sid: str, text: str) -> None:
    response, _ = await agent.request("session/prompt", prompt_params(sid, text))
    assert response["result"]["stopReason"] == "end_turn"


async def sessions(home: Home, action: str, sid: str) -> tuple[int, str, str]:
    """`loopd sessions ACTION SID`: its exit code, stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "loopd", "sessions", action, sid, env=home.env(), cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_a_second_process_is_refused_until_the_first_exits(home: Home) -> None:
    home.fake.script("*", Reply(text="first answer"), Reply(text="second answer"))
    async with raw_loopd(home, apart(home)) as first:
        sid = await first.new_session(home.work)
        await prompted(first, sid, "first question")
        async with raw_loopd(home, apart(home)) as second:
            refused = await load(second, home, sid)
            error = refused["error"]
            assert error["code"] == -32600
            assert error["message"] == (
                f"session {sid} is open in another loopd process (pid {first.proc.pid}"
                f" on {socket.gethostname()}); close it there or wait"
            )
            assert error["data"]["pid"] == first.proc.pid
            resume = {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
            again, _ = await second.request("session/resume", resume)
            assert again["error"]["code"] == -32600
            code, shown, _ = await sessions(home, "show", sid)
            assert code == 0 and "first question" in shown  # reading needs no lease
            code, _, told = await sessions(home, "delete", sid)
            assert code == 1 and f"pid {first.proc.pid}" in told

            assert first.proc.stdin is not None
            first.proc.stdin.close()  # the editor closed: the lease goes with the process
            assert await asyncio.wait_for(first.proc.wait(), 30) == 0

            response, _ = await second.request("session/load", resume)
            assert "result" in response
            await prompted(second, sid, "second question")
    roles = [m.role for m in stored(home, sid)]
    assert roles == ["user", "assistant", "user", "assistant"]


async def test_a_process_killed_with_the_session_open_does_not_keep_it(home: Home) -> None:
    home.fake.script("*", Reply(text="first answer"), Reply(text="second answer"))
    async with raw_loopd(home, apart(home)) as first:
        sid = await first.new_session(home.work)
        await prompted(first, sid, "first question")
        first.proc.kill()  # SIGKILL: no chance to drop the lease
        await first.proc.wait()
    async with raw_loopd(home, apart(home)) as second:
        assert "result" in await load(second, home, sid)
        await prompted(second, sid, "second question")
    roles = [m.role for m in stored(home, sid)]
    assert roles == ["user", "assistant", "user", "assistant"]
