"""`GuardedParts`: a native session's tools include its MCP servers' tools, what did
not start is said once at the first turn, and closing stops the servers."""

from __future__ import annotations

import os
from pathlib import Path

from loopd.app import GuardedParts, LazyProbe
from loopd.engine.delegate import ChildRuntime
from loopd.policy.rules import RuleSet
from loopd.protocol.events import AgentMessageChunk
from loopd.runtimes.base import McpServerConfig, RuntimeContext
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover, ScriptedProvider
from loopd.tools.env import ToolLimits
from loopd.tools.skills import SkillShelf
from tests.unit.mcp.conftest import stdio


async def test_mcp_tools_join_the_session_and_failures_are_said_once(tmp_path: Path) -> None:
    emitter = RecordingEmitter()
    ctx = RuntimeContext(
        session_id="s1",
        cwd=str(tmp_path),
        additional_roots=(),
        emitter=emitter,
        approver=ScriptedApprover(),
        config={},
        mcp_servers=(stdio("fake"), McpServerConfig("gone", command="/nonexistent/server")),
    )
    env = {"PATH": os.environ["PATH"]}
    child = ChildRuntime(ScriptedProvider.of(), "m")
    parts = await GuardedParts.open(
        ctx,
        "ask",
        {},
        env=env,
        probe=LazyProbe(env),
        rules=RuleSet(),
        child=child,
        shelf=SkillShelf(env),
        limits=ToolLimits(),
    )
    try:
        names = [s.name for s in parts.tools.specs()]
        assert names[:8] == ["read", "write", "edit", "bash", "glob", "grep", "plan", "explore"]
        assert "mcp__fake__echo" in names
        await parts.begin_turn()
        await parts.begin_turn()
    finally:
        await parts.aclose()
    [notice] = emitter.of(AgentMessageChunk)
    assert "- gone: could not start `/nonexistent/server`" in notice.text
    assert parts.mcp.clients == []  # closed
