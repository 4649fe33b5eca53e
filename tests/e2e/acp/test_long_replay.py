"""A long session's replay through the real `loopd acp`, in-process and through the
daemon: `session/load` of a 10,000-update journal (prompts, replies, thoughts, tool
calls, one left open) shows the editor every update, whole and in journal order,
each exactly as the SDK serializes it, then the open call as failed, all before
the load's answer. The updates go out batched (`loopd.acp.transport.Batched`):
what the editor reads must not change with that."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from acp.schema import SessionNotification

from loopd.protocol.events import (
    AgentMessageChunk,
    AgentThoughtChunk,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    UserMessageChunk,
)
from loopd.protocol.events_wire import to_wire
from loopd.store.reconcile import UNFINISHED
from loopd.store.sqlite import SessionRecord, SqliteStore
from tests.e2e.acp.conftest import LOOPD, Home, raw_loopd

pytestmark = pytest.mark.e2e

UPDATES = 10_000


@pytest.fixture(params=["off", "on"], ids=["in-process", "daemon"])
def env(request: pytest.FixtureRequest, home: Home) -> Iterator[dict[str, str]]:
    env = home.env(LOOPD_DAEMON=request.param)
    yield env
    if request.param == "on":
        subprocess.run([*LOOPD, "daemon", "stop"], env=env, capture_output=True, timeout=60)


def journal(n: int) -> list[dict[str, Any]]:
    """`n` updates of every kind a turn journals, the last call never finished."""
    out: list[dict[str, Any]] = []
    for i in range(n - 1):
        match i % 5:
            case 0:
                out.append(to_wire(UserMessageChunk(TextBlock(f"question {i} ü"), f"u{i}")))
            case 1:
                out.append(to_wire(AgentThoughtChunk(f"thinking {i}", f"t{i}")))
            case 2:
                out.append(to_wire(ToolCallStarted(f"c{i}", f"read f{i}.py", "read")))
            case 3:
                out.append(to_wire(ToolCallUpdated(f"c{i - 1}", status="completed")))
            case _:
                out.append(to_wire(AgentMessageChunk(f"answer {i} " * 6, f"a{i}")))
    out.append(to_wire(ToolCallStarted("open", "run the tests", "execute")))
    return out


def as_sent(session_id: str, update: dict[str, Any]) -> dict[str, Any]:
    """What the SDK puts on the wire for `update`."""
    note = SessionNotification.model_validate({"sessionId": session_id, "update": update})
    shown: dict[str, Any] = note.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_defaults=True
    )
    return shown


async def test_a_ten_thousand_update_session_replays_whole_and_in_order(
    home: Home, env: dict[str, str]
) -> None:
    updates = journal(UPDATES)
    (home.root / "data").mkdir()
    store = SqliteStore(home.root / "data" / "sessions.db")
    try:
        store.create(SessionRecord("long", str(home.work), created_at="2026-01-01T00:00:00Z"))
        for wire in updates:
            store.append_event("long", wire)
    finally:
        store.close()
    failed = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "open",
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": UNFINISHED}}],
    }

    async with raw_loopd(home, env) as agent:
        await agent.initialized()
        params = {"sessionId": "long", "cwd": str(home.work), "mcpServers": []}
        answer, before = await agent.request("session/load", params)

    assert "result" in answer, answer
    assert all(m.get("method") == "session/update" for m in before)
    shown = [m["params"] for m in before]
    assert len(shown) == UPDATES + 1
    assert shown == [as_sent("long", u) for u in [*updates, failed]]
