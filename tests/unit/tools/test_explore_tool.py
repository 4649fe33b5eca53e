"""`explore`: a read-only child turn behind one tool call, over the real tools in a
temporary workspace and a scripted child model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tooltest import GatedClock, RecordingProgress

from loopd.engine.delegate import ChildRuntime, DelegateLimits
from loopd.engine.ports import ToolCall
from loopd.policy.grants import Grant
from loopd.testing.fakes import Reply, ScriptedPolicy, ScriptedProvider
from loopd.tools.env import ToolEnv
from loopd.tools.explore import Explore
from loopd.tools.registry import ToolRegistry, builtin_tools


@pytest.fixture
async def ws(tmp_path: Path) -> AsyncIterator[ToolEnv]:
    (tmp_path / "a.py").write_text("def handler():\n    return 42\n")
    env = ToolEnv(roots=(str(tmp_path),), clock=GatedClock())
    yield env
    await env.aclose()


def explore_tool(
    env: ToolEnv,
    provider: ScriptedProvider,
    limits: DelegateLimits | None = None,
    child: ChildRuntime | None = None,
) -> tuple[ToolRegistry, ScriptedProvider]:
    tool = Explore(
        child or ChildRuntime(provider, "child-model", "cheap"),
        builtin_tools(),
        ScriptedPolicy(),
        limits or DelegateLimits(),
    )
    return ToolRegistry(env, (*builtin_tools(), tool)), provider


async def run(registry: ToolRegistry, question: str, progress: RecordingProgress | None = None):  # type: ignore[no-untyped-def]
    call = ToolCall("x1", "explore", {"question": question})
    declaration = await registry.declare(call)
    return declaration, await registry.run(call, progress or RecordingProgress())


async def test_the_report_is_capped_and_says_what_was_read(ws: ToolEnv) -> None:
    provider = ScriptedProvider.of(
        Reply(tools=[("r1", "read", {"path": "a.py"})]), Reply(text="handler returns 42. " * 50)
    )
    registry, _ = explore_tool(ws, provider, DelegateLimits(max_result_chars=60))
    progress = RecordingProgress()
    declaration, result = await run(registry, "What does handler return?", progress)

    assert declaration.title == "Explore: What does handler return?"
    assert declaration.kind == "search" and not declaration.writes
    assert declaration.reads == ws.roots
    assert not result.is_error
    lines = result.output.splitlines()
    assert lines[0] == ("handler returns 42. " * 3).rstrip()
    assert "Read: a.py" in lines and "Wrote: nothing" in lines
    assert "The answer was cut" in result.output
    assert result.raw_output == {
        "explore": {
            "read": ["a.py"],
            "wrote": [],
            "unread": [],
            "unwritten": [],
            "truncated": True,
            "stopReason": "end_turn",
            "child": {"agent": "explore", "runtime": "cheap", "model": "child-model"},
        }
    }
    offered = [spec.name for spec in provider.requests[0].tools]
    assert offered == ["read", "bash", "glob", "grep"]  # no explore, no write
    assert provider.requests[0].model == "child-model"
    assert "You are an explorer" in provider.requests[0].system
    assert "✓ Read a.py" in progress.last_text
    assert progress.last_text.startswith("Exploring on cheap (child-model)")


async def test_the_child_cannot_nest_write_or_run_commands_that_write(ws: ToolEnv) -> None:
    provider = ScriptedProvider.of(
        Reply(
            tools=[
                ("e1", "explore", {"question": "deeper?"}),
                ("w1", "write", {"path": "b.txt", "content": "x"}),
                ("b1", "bash", {"command": "rm a.py"}),
                ("b2", "bash", {"command": "ls"}),
                ("r1", "read", {"path": "missing.py"}),
            ]
        ),
        Reply(text="I could only look."),
    )
    registry, _ = explore_tool(ws, provider)
    _, result = await run(registry, "change things")

    root = Path(ws.cwd)
    assert (root / "a.py").exists() and not (root / "b.txt").exists()
    report = result.raw_output["explore"]  # type: ignore[index]
    assert report["unwritten"] == ["b.txt", "`rm a.py`"]
    assert report["unread"] == ["missing.py"]
    results = {r.tool_use_id: r for r in provider.requests[1].messages[-1].tool_results}
    assert "no tool named 'explore'" in results["e1"].content
    assert "explore is read-only" in results["w1"].content
    assert "read-only commands only" in results["b1"].content
    assert not results["b2"].is_error  # ls is read-only: it ran


async def test_the_child_has_a_smaller_iteration_cap(ws: ToolEnv) -> None:
    looping = [Reply(tools=[(f"g{i}", "glob", {"pattern": f"*{i}.py"})]) for i in range(5)]
    provider = ScriptedProvider.of(*looping)
    registry, _ = explore_tool(ws, provider, DelegateLimits(max_iterations=3))
    _, result = await run(registry, "find everything")
    assert len(provider.requests) == 3
    assert result.raw_output["explore"]["stopReason"] == "max_turn_requests"  # type: ignore[index]
    assert "The explorer stopped early (max_turn_requests)." in result.output


async def test_the_child_runs_at_its_resolved_thinking_level(ws: ToolEnv) -> None:
    provider = ScriptedProvider.of(Reply(text="42"))
    child = ChildRuntime(provider, "small-1-think", "cheap", thinking="high")
    registry, _ = explore_tool(ws, provider, child=child)
    _, result = await run(registry, "What does handler return?")
    assert (provider.requests[0].model, provider.requests[0].thinking) == ("small-1-think", "high")
    assert result.raw_output["explore"]["child"] == {  # type: ignore[index]
        "agent": "explore",
        "runtime": "cheap",
        "model": "small-1-think",
    }


async def test_a_file_only_the_child_read_is_still_unread_for_the_parent(ws: ToolEnv) -> None:
    provider = ScriptedProvider.of(
        Reply(tools=[("r1", "read", {"path": "a.py"})]), Reply(text="it returns 42")
    )
    registry, _ = explore_tool(ws, provider)
    _, report = await run(registry, "What does handler return?")
    assert "Read: a.py" in report.output

    overwrite = ToolCall("w1", "write", {"path": "a.py", "content": "gone\n"})
    await registry.declare(overwrite)
    result = await registry.run(overwrite, RecordingProgress())
    assert result.is_error and "not read it yet" in result.output
    assert (Path(ws.cwd) / "a.py").read_text() == "def handler():\n    return 42\n"


async def test_the_child_call_ids_never_meet_the_parents_grants(ws: ToolEnv) -> None:
    # The person approved the parent's `call_1` to use the network; its run is yet to
    # come when the child, whose model also names its first call `call_1`, runs.
    ws.grants.record("call_1", Grant(network=True))
    provider = ScriptedProvider.of(
        Reply(tools=[("call_1", "bash", {"command": "ls"})]), Reply(text="a.py")
    )
    registry, _ = explore_tool(ws, provider)
    _, report = await run(registry, "Which files are there?")
    assert not report.is_error
    assert not provider.requests[1].messages[-1].tool_results[0].is_error  # ls ran
    with ws.grants.running("call_1") as grant:
        assert grant.network  # still the parent's, for the parent's call
