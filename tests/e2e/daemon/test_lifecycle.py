"""The daemon's life: a forwarder of another version never uses it (a busy one
keeps its editors, an idle one is replaced); a daemon killed mid-turn loses no
journaled event and the next editor starts a new one that loads the session;
`loopd daemon status|stop`; the idle exit."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import ROOT, Home, RawAgent, prompt_params, raw_loopd, update_of
from tests.e2e.daemon.conftest import loopd, shared, status
from tests.e2e.lsp.conftest import until

pytestmark = pytest.mark.e2e


def newer_path(home: Home) -> str:
    """A PYTHONPATH on which loopd is version 9.9.9: a copy of this loopd that says
    so, as another install would be. The forwarder imports it, and any daemon that
    forwarder starts imports the same copy (never the editor's PYTHONPATH)."""
    newer = home.root / "newer"
    if not newer.exists():
        ignored = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / "server" / "loopd", newer / "loopd", ignore=ignored)
        init = newer / "loopd" / "__init__.py"
        init.write_text(re.sub(r'__version__ = ".*"', '__version__ = "9.9.9"', init.read_text()))
    return str(newer)


def other_version(home: Home) -> dict[str, str]:
    return shared(home, PYTHONPATH=newer_path(home))


async def agent_version(agent: RawAgent) -> str:
    response, _ = await agent.request("initialize", {"protocolVersion": 1})
    version: str = response["result"]["agentInfo"]["version"]
    return version


async def test_a_busy_daemon_of_another_version_is_left_alone(daemon_home: Home) -> None:
    home = daemon_home
    async with raw_loopd(home, shared(home)) as editor:
        assert await agent_version(editor) == "0.1.0"
        before = await status(home)
        async with raw_loopd(home, other_version(home)) as newer:
            assert await agent_version(newer) == "9.9.9"  # served in its own process
            after = await status(home)
            assert (after["pid"], after["version"], after["connections"]) == (
                before["pid"], "0.1.0", 1,
            )  # fmt: skip


async def test_an_idle_daemon_of_another_version_is_replaced(daemon_home: Home) -> None:
    home = daemon_home
    async with raw_loopd(home, shared(home)) as editor:
        assert await agent_version(editor) == "0.1.0"
    old = await status(home)
    async with raw_loopd(home, other_version(home)) as newer:
        assert await agent_version(newer) == "9.9.9"
        code, out, _ = await loopd(home, "daemon", "status", "--json", PYTHONPATH=newer_path(home))
        new = json.loads(out)
        assert code == 0 and new["version"] == "9.9.9" and new["pid"] != old["pid"]
        assert new["connections"] == 1  # served by the new daemon
    await loopd(home, "daemon", "stop", PYTHONPATH=newer_path(home))


def stored_events(home: Home, sid: str) -> list[dict[str, Any]]:
    from loopd.store.sqlite import SqliteStore

    store = SqliteStore(home.root / "data" / "sessions.db")
    try:
        return store.events(sid)
    finally:
        store.close()


async def test_a_daemon_killed_mid_turn_loses_nothing_journaled(daemon_home: Home) -> None:
    home = daemon_home
    home.fake.script(
        "*",
        Reply(text="the first words and then", chunk=8, pause_after=4, gate="held"),
        Reply(text="a fresh answer"),
    )
    async with raw_loopd(home, shared(home)) as editor:
        sid = await editor.new_session(home.work)
        await editor.send(
            {"id": 99, "method": "session/prompt", "params": prompt_params(sid, "q1")}
        )
        first = await editor.until(lambda m: bool(update_of(m).get("content", {}).get("text")))
        pid = (await status(home))["pid"]
        os.kill(pid, signal.SIGKILL)
        assert editor.proc.stdout is not None
        seen = [first] + [json.loads(line) async for line in _rest(editor)]
        assert await asyncio.wait_for(editor.proc.wait(), 30) == 1
        assert editor.proc.stderr is not None
        told = (await editor.proc.stderr.read()).decode()
        assert "the loopd daemon went away; the session is kept" in told
    home.fake.release("held")

    journal = stored_events(home, sid)
    shown = [update_of(m) for m in seen if update_of(m)]
    assert shown and all(update in journal for update in shown)
    assert any(e.get("content", {}).get("text") == "q1" for e in journal)

    async with raw_loopd(home, shared(home)) as again:  # a new daemon starts
        await again.initialized()
        params = {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
        loaded, replayed = await again.request("session/load", params)
        assert "result" in loaded
        *shown, notice = [update_of(m) for m in replayed]
        assert shown == journal
        assert notice["_meta"]["loopd"] == {"interrupted": True}  # the cut turn is said
        response, _ = await again.request("session/prompt", prompt_params(sid, "q2"))
        assert response["result"]["stopReason"] == "end_turn"
    assert (await status(home))["pid"] != pid


async def _rest(agent: RawAgent) -> Any:
    assert agent.proc.stdout is not None
    while line := await asyncio.wait_for(agent.proc.stdout.readline(), 30):
        yield line


async def test_status_stop_and_the_idle_exit(daemon_home: Home) -> None:
    home = daemon_home
    code, _, _ = await loopd(home, "daemon", "status")
    assert code == 1
    async with raw_loopd(home, shared(home)) as editor:
        await editor.initialized()
        code, out, _ = await loopd(home, "daemon", "status")
        assert code == 0 and "1 editor connection(s)" in out and str(home.root) in out
    code, out, _ = await loopd(home, "daemon", "stop")
    assert (code, out) == (0, "stopped\n")
    assert not (await status(home))["running"]
    assert (await loopd(home, "daemon", "stop"))[1] == "no daemon was running\n"

    async with raw_loopd(home, shared(home, LOOPD_DAEMON_IDLE="1")) as editor:
        await editor.new_session(home.work)  # its `initialize` may come before the daemon
    assert (await status(home))["running"]
    await until(lambda: not _socket(home).exists(), within=20)  # it exits by itself


def _socket(home: Home) -> Path:
    from loopd.daemon.place import place_of

    return Path(place_of(shared(home)).endpoint)
