# ruff: noqa: ASYNC110, ASYNC240 -- reads tmp_path files and polls real processes
import asyncio
import re
from pathlib import Path

import pytest
from tooltest import Call, GatedClock, RecordingProgress, alive, dies

from loopd.engine.ports import ToolCall, ToolResult
from loopd.protocol.events import TextBlock
from loopd.sandbox.base import CommandSpec, PreparedCommand, Unsandboxed
from loopd.tools import ToolEnv, ToolLimits, ToolRegistry
from loopd.tools.output import HeadTail

# Bounds a wait on a real subprocess so a regression fails instead of hanging; the
# tests never sleep for it.
BOUND = 10


def pids(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", text)}


async def start(
    tools: ToolRegistry, command: str, wanted: str, **args: object
) -> tuple["asyncio.Task[ToolResult]", RecordingProgress]:
    """Run a command in a task and return once its output contains `wanted`."""
    progress = RecordingProgress(wanted=wanted)
    call = ToolCall("c1", "bash", {"command": command, **args})
    task = asyncio.ensure_future(tools.run(call, progress))
    await asyncio.wait_for(progress.seen.wait(), BOUND)
    return task, progress


async def test_runs_a_command_with_merged_output_and_exit_code(call: Call) -> None:
    out = await call("bash", command="echo out; echo err >&2; exit 3")
    assert out.declaration.title == "Run `echo out; echo err >&2; exit 3`"
    assert out.declaration.kind == "execute"
    assert out.declaration.command == "echo out; echo err >&2; exit 3"
    assert (out.declaration.reads, out.declaration.writes) == ((), ())
    assert out.result.output == "out\nerr\n\nExit code: 3"
    assert out.result.is_error
    assert out.result.raw_output == {
        "exit_code": 3,
        "timed_out": False,
        "output_chars": 8,
        "truncated": False,
    }
    assert out.result.content == (TextBlock("out\nerr\n\nExit code: 3"),)


async def test_runs_in_the_working_directory(call: Call, env: ToolEnv) -> None:
    out = await call("bash", command="pwd -P; true")
    assert out.result.output == f"{env.cwd}\n\nExit code: 0"
    assert not out.result.is_error


async def test_a_silent_success_says_no_output(call: Call) -> None:
    out = await call("bash", command="true")
    assert out.result.output == "(no output)\n\nExit code: 0"


async def test_output_streams_before_the_command_ends(tools: ToolRegistry, tmp_path: Path) -> None:
    task, progress = await start(
        tools, "echo first; while [ ! -f go ]; do sleep 0.005; done; echo second", "first"
    )
    assert progress.last_text == "first\n"
    assert not task.done()
    (tmp_path / "go").touch()
    result = await asyncio.wait_for(task, BOUND)
    assert progress.last_text == "first\nsecond\n"
    assert result.output == "first\nsecond\n\nExit code: 0"


async def test_the_model_gets_head_and_tail_while_the_ui_gets_everything(
    tmp_path: Path,
) -> None:
    env = ToolEnv(roots=(str(tmp_path),), limits=ToolLimits(output_max_chars=200))
    progress = RecordingProgress()
    result = await ToolRegistry(env).run(
        ToolCall("c1", "bash", {"command": "seq 1 2000"}), progress
    )
    full = "".join(f"{i}\n" for i in range(1, 2001))
    assert progress.last_text == full
    assert result.content == (TextBlock(full + "\nExit code: 0"),)
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.endswith("1999\n2000\n\nExit code: 0")
    cut = len(full) - 200
    assert f"[... {cut} characters cut from the middle of the output;" in result.output
    assert len(result.output) < 400
    assert result.raw_output is not None
    assert result.raw_output["truncated"] is True
    await env.aclose()


async def test_timeout_kills_the_group_even_a_child_ignoring_sigterm(
    tools: ToolRegistry, clock: GatedClock
) -> None:
    task, progress = await start(
        tools,
        "trap '' TERM; sleep 1000 & echo leader=$$ child=$!; wait",
        "child=",
        timeout=30,
    )
    found = pids(progress.last_text)
    assert alive(found["child"])
    clock.open()  # the 30 s pass
    result = await asyncio.wait_for(task, BOUND)
    assert clock.sleeps[:2] == [30, 2.0]  # the timeout, then the SIGTERM grace
    assert await dies(found["child"])
    assert not alive(found["leader"])
    assert result.is_error
    assert result.output.endswith(
        "Timed out after 30 s; the command and everything it started were killed."
    )
    assert result.raw_output is not None
    assert result.raw_output["timed_out"] is True
    assert result.raw_output["exit_code"] is None


async def test_cancellation_kills_the_group_and_propagates(tools: ToolRegistry) -> None:
    task, progress = await start(tools, "sleep 1000 & echo leader=$$ child=$!; wait", "child=")
    found = pids(progress.last_text)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, BOUND)
    assert await dies(found["child"])
    assert not alive(found["leader"])


async def test_a_foreground_command_leaves_no_stragglers(call: Call) -> None:
    out = await call("bash", command="sleep 1000 & echo child=$!")
    assert await dies(pids(out.result.output)["child"])
    assert out.result.output.endswith("Exit code: 0")


async def test_background_processes_die_when_the_env_closes(call: Call, env: ToolEnv) -> None:
    out = await call("bash", command="sleep 1000 & echo child=$!; wait", background=True)
    assert out.result.raw_output is not None
    leader, log = out.result.raw_output["pid"], Path(out.result.raw_output["log"])
    assert out.result.output.startswith(f"Started in the background as bg1 (pid {leader}).")
    assert str(log) in out.result.output
    async with asyncio.timeout(BOUND):
        while "child=" not in log.read_text():
            await asyncio.sleep(0.005)
    child = pids(log.read_text())["child"]
    assert alive(leader)
    assert alive(child)
    assert [p.id for p in env.processes.running()] == ["bg1"]

    await env.aclose()

    assert not alive(leader)
    assert await dies(child)
    assert not log.exists()  # the session's scratch directory went with it
    late = await call("bash", command="sleep 1", background=True)
    assert late.result.is_error
    assert "session is closed" in late.result.output


async def test_commands_run_as_the_sandbox_prepares_them(tmp_path: Path) -> None:
    seen: list[CommandSpec] = []

    class RecordingSandbox:
        tier = "recording"

        def prepare(self, spec: CommandSpec) -> PreparedCommand:
            seen.append(spec)
            return PreparedCommand(spec.argv, {"PATH": "/usr/bin:/bin", "MARK": "set"}, spec.cwd)

    env = ToolEnv(roots=(str(tmp_path), "/"), sandbox=RecordingSandbox())
    result = await ToolRegistry(env).run(
        ToolCall("c1", "bash", {"command": "echo $MARK"}), RecordingProgress()
    )
    assert result.output == "set\n\nExit code: 0"
    assert seen == [CommandSpec(("bash", "-c", "echo $MARK"), env.cwd, env.roots, False)]
    await env.aclose()


async def test_the_default_sandbox_keeps_secrets_out(tmp_path: Path) -> None:
    base = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": "sk-secret"}
    env = ToolEnv(roots=(str(tmp_path),), sandbox=Unsandboxed(base))
    result = await ToolRegistry(env).run(
        ToolCall("c1", "bash", {"command": "echo ${ANTHROPIC_API_KEY:-unset}"}),
        RecordingProgress(),
    )
    assert result.output.startswith("unset\n")
    await env.aclose()


def test_head_tail_keeps_both_ends_within_its_budget() -> None:
    text = HeadTail(keep=10)
    for piece in ("abc", "defgh", "ijklmnopqrstuvwxyz"):
        text.append(piece)
    assert text.total == 26
    assert text.render(10) == (
        "abcde\n[... 16 characters cut from the middle of the output; narrow the command "
        "(grep, head, tail) to see them ...]\nvwxyz"
    )
    assert text.render(4).startswith("ab\n[... 22 characters cut")
    small = HeadTail(keep=10)
    small.append("short")
    assert small.render(10) == "short"


async def test_a_slow_ui_still_receives_the_latest_output_in_order(tmp_path: Path) -> None:
    """Reading pauses while output waits for the consumer, and resumes: every update
    is the latest stretch of the output (bounded), later ones further on."""
    env = ToolEnv(roots=(str(tmp_path),))
    texts: list[str] = []

    async def slow(content: tuple[object, ...]) -> None:
        block = content[0]
        assert isinstance(block, TextBlock)
        texts.append(block.text)
        for _ in range(20):
            await asyncio.sleep(0)

    result = await ToolRegistry(env).run(ToolCall("c1", "bash", {"command": "seq 1 100000"}), slow)
    full = "".join(f"{i}\n" for i in range(1, 100001))
    assert full.endswith(texts[-1])
    ends = [full.find(t) + len(t) for t in texts]
    assert all(full.find(t) >= 0 for t in texts)
    assert ends == sorted(ends)
    assert all(len(t) <= env.limits.live_max_chars for t in texts)
    assert result.raw_output is not None
    assert result.raw_output["output_chars"] == len(full)
    await env.aclose()
