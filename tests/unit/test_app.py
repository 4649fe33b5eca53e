"""`GuardedParts`: a native session's tools include its MCP servers' tools, what did
not start is said once at the first turn, and closing stops the servers."""

from __future__ import annotations

import os
from pathlib import Path

from loopd.app import build_app
from loopd.engine.delegate import ChildRuntime
from loopd.mcp.config import McpServerConfig
from loopd.policy.reading import DiskReader
from loopd.policy.rules import RuleSet
from loopd.protocol.events import AgentMessageChunk
from loopd.runtimes.base import RuntimeContext
from loopd.runtimes.foreign.claude import ClaudeRuntimeFactory
from loopd.runtimes.native.parts import GuardedParts, LazyProbe
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
        shelf=SkillShelf(env, DiskReader(())),
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


def test_a_claude_entry_hands_its_small_model_to_the_cli(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\necho '2.1.0 (Claude Code)'\n")
    claude.chmod(0o755)
    config = tmp_path / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[runtimes.claude]\nharness = "claude"\nmodels = ["sonnet", "haiku"]\n'
        'small_model = "haiku"\n'
    )
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LOOPD_HOME": str(tmp_path / "data"),
    }
    (tmp_path / "ws").mkdir()  # the CLI is never found inside the workspace
    app = build_app(env, str(tmp_path / "ws"))
    factory = app.manager.runtimes["claude"]
    assert isinstance(factory, ClaudeRuntimeFactory)
    assert factory.settings.env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "haiku"
    assert factory.settings.env["ANTHROPIC_SMALL_FAST_MODEL"] == "haiku"
    app.store.close()


def test_a_started_probe_is_the_one_every_session_gets() -> None:
    """`start` probes in the background; the sessions that open meanwhile wait for
    that probe and share it (it runs once)."""
    probe = LazyProbe({"PATH": os.environ["PATH"]})
    running = probe.start()
    first = probe.get()  # waits for the started probe
    running.join(30)
    assert not running.is_alive()
    assert first.best in {r.tier for r in first.reports if r.available}
    assert probe.get() is first


def test_sessions_are_offered_only_the_main_agents_runtimes(tmp_path: Path) -> None:
    config = tmp_path / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[providers.main]\nkind = "anthropic"\nmodels = ["m"]\n'
        '[providers.cheap]\nkind = "openai_chat"\nbase_url = "http://127.0.0.1:1/v1"\n'
        'models = ["c"]\n[agents.main]\nruntimes = ["cheap"]\n'
    )
    env = {
        "PATH": str(tmp_path),  # no claude, no codex
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LOOPD_HOME": str(tmp_path / "data"),
    }
    app = build_app(env, str(tmp_path))
    try:
        assert app.catalog.catalog.names == ("cheap", "main")
        assert set(app.manager.runtimes) == {"cheap"}
        assert app.manager.default_runtime == "cheap"
        identity = app.manager.identify("cheap", {})
        assert (identity["agent"], identity["runtime"]) == ("main", "cheap")
        assert identity["catalog_digest"] == app.catalog.catalog.digest
    finally:
        app.store.close()
