"""The scheduler judges the declarations the real tools make: a write is kept apart
from a `grep` or `glob` of the folder it lies in and from an `explore` of the
workspace; reads of other files still run beside it; two questions to the person
are never in one group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopd.engine.delegate import ChildRuntime
from loopd.engine.ports import ToolCall
from loopd.engine.schedule import ToolExecution, schedule
from loopd.protocol.questions import Question
from loopd.testing.fakes import ScriptedPolicy, ScriptedProvider
from loopd.tools import ToolEnv, ToolRegistry
from loopd.tools.ask_user import AskUser
from loopd.tools.explore import Explore
from loopd.tools.registry import builtin_tools


async def groups(tools: ToolRegistry, *calls: tuple[str, dict[str, Any]]) -> list[list[str]]:
    """The groups, by tool name, of `calls` declared by the real tools."""
    execs = []
    for index, (name, args) in enumerate(calls):
        call = ToolCall(f"c{index}", name, args)
        execs.append(ToolExecution(index, call, await tools.declare(call)))
    return [[ex.call.name for ex in group] for group in schedule(execs, 8)]


class Nobody:
    """Someone who could be asked (the tool is offered); never asked here."""

    async def ask_user(self, question: Question) -> str | None:
        raise AssertionError("only declared")


WRITE = ("write", {"path": "src/new.py", "content": "x = 1\n"})


async def test_a_write_runs_apart_from_searches_of_its_folder(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "other.txt").write_text("other\n")
    tools = ToolRegistry(ToolEnv(roots=(str(tmp_path),)))
    grep = ("grep", {"pattern": "x", "path": "src"})
    glob = ("glob", {"pattern": "*.py", "path": "src"})
    read = ("read", {"path": "other.txt"})
    assert await groups(tools, WRITE, grep) == [["write"], ["grep"]]
    assert await groups(tools, glob, WRITE) == [["glob"], ["write"]]
    assert await groups(tools, WRITE, read, grep) == [["write", "read"], ["grep"]]


async def test_a_write_runs_apart_from_an_explore_of_the_workspace(tmp_path: Path) -> None:
    core = builtin_tools()
    explorer = Explore(ChildRuntime(ScriptedProvider.of(), "m"), core, ScriptedPolicy())
    tools = ToolRegistry(ToolEnv(roots=(str(tmp_path),)), [*core, explorer])
    explore = ("explore", {"question": "where is x set?"})
    assert await groups(tools, explore, WRITE) == [["explore"], ["write"]]


async def test_two_questions_are_never_one_group(tmp_path: Path) -> None:
    env = ToolEnv(roots=(str(tmp_path),), person=lambda: Nobody())
    tools = ToolRegistry(env, [AskUser()])
    ask = ("ask_user", {"question": "which?"})
    assert await groups(tools, ask, ask) == [["ask_user"], ["ask_user"]]
