"""`bash` in the editor's terminal: when it is used, what the editor is handed, and
how the run becomes a result."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tooltest import RecordingProgress

from loopd.engine.ports import ToolCall
from loopd.protocol.events import TerminalContent
from loopd.sandbox.base import PreparedCommand
from loopd.sandbox.landlock_syscalls import die_with_parent
from loopd.tools import ToolEnv, ToolRegistry
from loopd.tools.access import TerminalRun
from loopd.tools.bash import Bash, editor_argv


@dataclass
class SpawningTerminals:
    """An editor's terminals: runs the argv for real, in an environment holding a
    secret of its own (an editor adds its environment), or never ends (`hang`)."""

    hang: bool = False
    runs: list[Sequence[str]] = field(default_factory=list)
    released: list[str] = field(default_factory=list)

    async def run(
        self,
        argv: Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        on_start: Callable[[str], Awaitable[None]],
        output_byte_limit: int | None = None,
    ) -> TerminalRun:
        self.runs.append(argv)
        terminal_id = f"t{len(self.runs)}"
        try:
            await on_start(terminal_id)
            if self.hang:
                await asyncio.Event().wait()
            done = await asyncio.to_thread(
                subprocess.run,
                list(argv),
                cwd=cwd,
                env={"PATH": "/usr/bin:/bin", "EDITOR_SECRET": "leaked", **env},
                capture_output=True,
                text=True,
            )
            return TerminalRun(done.stdout, False, done.returncode, None)
        finally:
            self.released.append(terminal_id)


def test_only_sandboxes_contained_by_their_argv_go_to_the_editor() -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/h"}
    plain = PreparedCommand(("bash", "-c", "true"), env, "/w")
    argv = editor_argv(plain)
    assert argv is not None
    assert argv[0].endswith("env") and argv[1:] == (
        "-i",
        "PATH=/usr/bin:/bin",
        "HOME=/h",
        "bash",
        "-c",
        "true",
    )
    lifetime_only = PreparedCommand(("bwrap", "--", "true"), env, "/w", die_with_parent)
    assert editor_argv(lifetime_only) is not None

    def restrict() -> None:  # a sandbox that contains in the child (Landlock)
        return None

    assert editor_argv(PreparedCommand(("true",), env, "/w", restrict)) is None


async def test_a_command_runs_in_the_editor_without_its_environment(tmp_path: Path) -> None:
    terminals = SpawningTerminals()
    env = ToolEnv(roots=(str(tmp_path),), editor_terminals=lambda: terminals)
    progress = RecordingProgress()
    command = 'echo "secret=[$EDITOR_SECRET]"; exit 3'
    result = await ToolRegistry(env).run(ToolCall("c1", "bash", {"command": command}), progress)
    assert progress.calls == [(TerminalContent("t1"),)]
    assert result.content == (TerminalContent("t1"),)
    assert result.output == "secret=[]\n\nExit code: 3"
    assert result.is_error
    assert terminals.released == ["t1"]
    await env.aclose()


async def test_a_timeout_releases_the_terminal(tmp_path: Path) -> None:
    terminals = SpawningTerminals(hang=True)
    env = ToolEnv(roots=(str(tmp_path),), editor_terminals=lambda: terminals)
    args = {"command": "sleep 100", "timeout": 0.005}  # under the schema's minimum
    result = await Bash().run(args, env, RecordingProgress())
    assert "Timed out after 0.005 s" in result.output
    assert terminals.released == ["t1"]
    await env.aclose()


async def test_background_commands_stay_local(tmp_path: Path) -> None:
    terminals = SpawningTerminals()
    env = ToolEnv(roots=(str(tmp_path),), editor_terminals=lambda: terminals)
    call = ToolCall("c1", "bash", {"command": "true", "background": True})
    result = await ToolRegistry(env).run(call, RecordingProgress())
    assert "Started in the background" in result.output
    assert terminals.runs == []
    await env.aclose()
