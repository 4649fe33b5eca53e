"""The write ledger sees every change that could stale a seal: a command the
classifier once called read-only, an MCP tool (whose effects are unknown), the
person's undo, and the explore child. Whole turns over the real tools in a temporary
workspace, criteria run as real commands, a scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from loopd.engine.delegate import ChildRuntime
from loopd.engine.done import DoneSet
from loopd.engine.loop import Engine
from loopd.protocol.events import Prompt, TextBlock, ToolCallStarted
from loopd.testing.fakes import RecordingEmitter, Reply, ScriptedPolicy, ScriptedProvider
from loopd.tools.base import Tool
from loopd.tools.criteria import SandboxedDone
from loopd.tools.env import ToolEnv
from loopd.tools.explore import Explore
from loopd.tools.registry import ToolRegistry, builtin_tools
from tests.unit.engine.test_done import HAS_GOOD, TimeoutClock, bash, seal, write
from tests.unit.engine.test_loop import Rig
from tests.unit.mcp.conftest import connected, stdio

DONE = DoneSet((HAS_GOOD,))


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[ToolEnv]:
    env = ToolEnv(roots=(str(tmp_path),), clock=TimeoutClock())
    yield env
    await env.aclose()


def engine(
    env: ToolEnv, emitter: RecordingEmitter, *replies: Reply, tools: Sequence[Tool] = ()
) -> Engine:
    registry = ToolRegistry(env, (*builtin_tools(), *tools))
    rig = Rig(ScriptedProvider.of(*replies), registry, emitter, clock=env.clock)
    built = rig.engine()
    built.ports.done = SandboxedDone(env, DONE)
    return built


async def turn(env: ToolEnv, engine: Engine) -> str:
    env.changes.begin_turn()  # what the runtime's parts do before each turn
    return seal(await engine.run(Prompt((TextBlock("work"),)))).seal


def checks(emitter: RecordingEmitter) -> int:
    return sum(1 for e in emitter.of(ToolCallStarted) if e.title.startswith("Check"))


async def passed_first(
    env: ToolEnv, emitter: RecordingEmitter, *then: Reply, tools: Sequence[Tool] = ()
) -> Engine:
    """An engine whose first turn writes a.txt "good" and seals passed; `then` is
    what the model does in the next turn."""
    first = (write("w1", "a.txt", "good\n"), Reply(text="done"))
    built = engine(env, emitter, *first, *then, tools=tools)
    assert await turn(env, built) == "passed"
    return built


async def test_a_sort_that_writes_stales_a_passed_seal(env: ToolEnv) -> None:
    emitter = RecordingEmitter()
    # getopt's joined form: sort writes a.txt (empty, from no input)
    rig = await passed_first(env, emitter, bash("b1", "sort -oa.txt"), Reply(text="sorted"))
    assert await turn(env, rig) == "failed"  # checked again, and a.txt lost "good"
    assert checks(emitter) == 2


async def test_an_undo_stales_a_passed_seal(env: ToolEnv) -> None:
    emitter = RecordingEmitter()
    rig = await passed_first(env, emitter, Reply(text="?"))
    report = await env.changes.undo(env.files)  # the person's /undo, between turns
    assert report.restored == (str(Path(env.cwd) / "a.txt"),)
    assert await turn(env, rig) == "failed"  # the undone file is checked, not trusted
    assert checks(emitter) == 2


async def test_an_mcp_call_moves_the_ledger_whatever_it_claims(env: ToolEnv) -> None:
    emitter = RecordingEmitter()
    async with connected([stdio("fake")]) as servers:
        echo = [t for t in servers.tools if t.name == "mcp__fake__echo"]
        assert echo[0].info.read_only  # the server says so; loopd cannot know
        call = Reply(tools=[("m1", "mcp__fake__echo", {"text": "hi"})])
        rig = await passed_first(env, emitter, call, Reply(text="echoed"), tools=echo)
        assert await turn(env, rig) == "passed"
    assert checks(emitter) == 2  # the seal after the MCP call is a new check's


async def test_the_explore_child_cannot_write_with_a_safe_listed_command(env: ToolEnv) -> None:
    child = ScriptedProvider.of(
        Reply(tools=[("c1", "bash", {"command": "sort -uo a.txt"})]), Reply(text="looked")
    )
    tool = Explore(ChildRuntime(child, "child-model"), builtin_tools(), ScriptedPolicy())
    emitter = RecordingEmitter()
    call = Reply(tools=[("e1", "explore", {"question": "what is in a.txt?"})])
    rig = await passed_first(env, emitter, call, Reply(text="it says good"), tools=[tool])
    assert await turn(env, rig) == "passed"
    assert (Path(env.cwd) / "a.txt").read_text() == "good\n"
    refused = child.requests[1].messages[-1].tool_results[0]
    assert "read-only commands only" in refused.content


async def test_a_background_command_that_may_write_keeps_the_seal_stale(env: ToolEnv) -> None:
    waits = "while [ ! -e go ]; do sleep 0.05; done; echo bad > a.txt"  # never let go
    emitter = RecordingEmitter()
    rig = engine(
        env,
        emitter,
        Reply(
            tools=[
                ("w1", "write", {"path": "a.txt", "content": "good\n"}),
                ("b1", "bash", {"command": waits, "background": True}),
            ]
        ),
        Reply(text="done"),
    )
    assert await turn(env, rig) == "stale"  # it may write after any check
    assert checks(emitter) == 1 and len(env.processes.running()) == 1
