"""The prompt queue through the ACP SDK: a full queue is an error, not a stop reason."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError

from loopd.sessions.manager import MAX_QUEUED
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import scripted_manager
from tests.unit.acp.conftest import RecordingClient, connected, text


async def test_a_prompt_refused_by_a_full_queue_is_an_error(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(text="busy", hold=asyncio.Event()))
    manager = scripted_manager(tmp_path, provider)
    async with connected(manager, RecordingClient()) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = new.session_id
        running = asyncio.create_task(s.conn.prompt(session_id=sid, prompt=text("run")))
        await provider.started.wait()
        waiting = [
            asyncio.create_task(s.conn.prompt(session_id=sid, prompt=text(f"q{i}")))
            for i in range(MAX_QUEUED)
        ]
        live = manager._live[sid]
        async with asyncio.timeout(10):
            while live.waiting < MAX_QUEUED:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        with pytest.raises(RequestError) as refused:
            await s.conn.prompt(session_id=sid, prompt=text("one too many"))
        assert refused.value.code == -32600
        assert "already waiting" in str(refused.value.data)
        await s.conn.cancel(session_id=sid)
        results = await asyncio.gather(running, *waiting)
    assert {r.stop_reason for r in results} == {"cancelled"}
