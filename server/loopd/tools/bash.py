"""`bash`: run a shell command in the working directory, through the sandbox.

The command is `bash -c COMMAND`, handed to the session's `CommandSandbox` to be
contained and then spawned as its own process group (see `processes`). Its output
(stdout and stderr merged, in the order written) goes two ways with two budgets:
the person sees all of it as it arrives, through `progress`; the model gets the
head and the tail with a note of how much was cut from the middle, because the
start (what ran) and the end (the error, the summary) are where the information is.

Background commands belong to the session: they write to a log file the model can
read, and they are stopped when the session's env closes.

When the prompting editor has terminals (ACP `terminal/*`), a foreground command
runs in one of them instead, so the person watches it there; the editor spawns it,
so that happens only when containment survives the hand-over (see `editor_argv`).
"""

from __future__ import annotations

import asyncio
import shutil
import signal
from dataclasses import replace
from typing import Any, ClassVar

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import TerminalContent, TextBlock, ToolKind
from loopd.sandbox.base import CommandSpec, PreparedCommand
from loopd.sandbox.landlock_syscalls import die_with_parent
from loopd.tools.base import Args
from loopd.tools.env import EditorTerminals, ToolEnv
from loopd.tools.processes import Finished, run_captured


class HeadTail:
    """Accumulates streamed text, keeping at most `keep` characters: everything while
    it fits, then the first and last halves. `render(cap)` gives the text within
    `cap` characters (cap <= keep) with a note of what was cut."""

    def __init__(self, keep: int) -> None:
        self._half = keep // 2
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.total = 0

    def append(self, text: str) -> None:
        self.total += len(text)
        room = self._half - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if text:
            self._tail += text
            if len(self._tail) > 2 * self._half:  # trim rarely: amortised O(1) per char
                self._tail = self._tail[-self._half :]

    def render(self, cap: int) -> str:
        cap = min(cap, 2 * self._half)
        kept = "".join(self._head) + self._tail[-self._half :]
        if self.total <= cap:
            return kept
        head, tail = kept[: cap // 2], kept[len(kept) - (cap - cap // 2) :]
        cut = self.total - len(head) - len(tail)
        return (
            f"{head}\n[... {cut} characters cut from the middle of the output; narrow the "
            f"command (grep, head, tail) to see them ...]\n{tail}"
        )


class Bash:
    name = "bash"
    kind: ToolKind = "execute"
    description = (
        "Run a shell command with bash in the working directory. stdout and stderr are "
        "merged; long output is cut in the middle. timeout is in seconds (default 120, "
        "at most 600); on timeout the command and everything it started are killed. "
        "Set background to true for servers and watchers: the command keeps running, "
        "its output goes to a log file you can read, and it is stopped when the session "
        "ends. Processes a foreground command leaves behind are killed when it exits. "
        "Prefer the read, edit, glob and grep tools over cat, sed, find and grep."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "The command."},
            "timeout": {"type": "number", "minimum": 0.1, "description": "Seconds."},
            "background": {"type": "boolean", "description": "Run detached; default false."},
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        command: str = args["command"]
        _timeout(args, env)
        return Declaration(
            title=f"Run `{command}`", kind=self.kind, command=command, network=env.network
        )

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        command: str = args["command"]
        timeout = _timeout(args, env)
        prepared = env.sandbox.prepare(
            CommandSpec(
                argv=("bash", "-c", command),
                cwd=env.cwd,
                writable_roots=env.roots,
                network=env.network,
            )
        )
        if args.get("background", False):
            return await _start_background(prepared, command, env)
        terminals, argv = env.editor_terminals(), editor_argv(prepared)
        if terminals is not None and argv is not None:
            return await _run_in_editor(terminals, argv, prepared.cwd, timeout, env, progress)
        output = HeadTail(env.limits.stream_max_chars)

        async def on_output(text: str) -> None:
            output.append(text)
            await progress((TextBlock(output.render(env.limits.stream_max_chars)),))

        finished = await run_captured(
            prepared,
            clock=env.clock,
            time_limit=timeout,
            grace=env.limits.kill_grace,
            on_output=on_output,
        )
        return _result(finished, output, timeout, env)


def editor_argv(prepared: PreparedCommand) -> tuple[str, ...] | None:
    """The argv an editor can spawn with the same containment as loopd would, or None
    when there is none.

    The editor spawns the command, so the child set-up (`preexec`) cannot run: a
    sandbox that contains through it (Landlock on its own) stays local. The one
    set-up that may be skipped ties the command's life to loopd's; in an editor
    terminal the editor owns the process and `terminal/release` ends it. The bwrap
    and unshare tiers contain through the argv itself. The environment is another
    matter: an editor is free to start from its own environment (Zed does), which
    holds the person's secrets, so the argv starts with `env -i` and sets exactly the
    sandbox's scrubbed variables."""
    if prepared.preexec is not None and prepared.preexec is not die_with_parent:
        return None
    env_binary = shutil.which("env")
    if env_binary is None:
        return None
    assignments = (f"{k}={v}" for k, v in prepared.env.items())
    return (env_binary, "-i", *assignments, *prepared.argv)


async def _run_in_editor(
    terminals: EditorTerminals,
    argv: tuple[str, ...],
    cwd: str,
    time_limit: float,
    env: ToolEnv,
    progress: ToolProgress,
) -> ToolResult:
    """The editor streams the output itself (`terminal` content); the model gets
    what the editor kept, head and tail as for a local run."""
    shown: list[str] = []

    async def on_start(terminal_id: str) -> None:
        shown.append(terminal_id)
        await progress((TerminalContent(terminal_id),))

    output = HeadTail(env.limits.stream_max_chars)
    try:
        async with asyncio.timeout(time_limit):
            run = await terminals.run(argv, cwd, {}, on_start, env.limits.stream_max_chars)
    except TimeoutError:
        finished = Finished(exit_code=None, timed_out=True)
    else:
        output.append(run.output)
        finished = Finished(_exit_code(run.exit_code, run.signal), timed_out=False)
    result = _result(finished, output, time_limit, env)
    if shown:
        result = replace(result, content=(TerminalContent(shown[0]),))
    return result


def _exit_code(code: int | None, signal_name: str | None) -> int | None:
    """A signal as a negative code, as for a local run."""
    if code is not None:
        return code
    if signal_name is not None:
        name = signal_name if signal_name.startswith("SIG") else f"SIG{signal_name}"
        if name in signal.Signals.__members__:
            return -signal.Signals[name].value
    return -signal.SIGKILL.value


def _timeout(args: Args, env: ToolEnv) -> float:
    timeout: float = args.get("timeout", env.limits.bash_default_timeout)
    if timeout > env.limits.bash_max_timeout:
        raise ToolInputError(
            f"`timeout` must be at most {env.limits.bash_max_timeout:g} seconds, got "
            f"{timeout:g}; for a long-running process set background to true"
        )
    return timeout


def _status(finished: Finished, timeout: float) -> str:
    if finished.exit_code is None:
        return f"Timed out after {timeout:g} s; the command and everything it started were killed."
    if finished.exit_code < 0:
        return f"Killed by signal {signal.Signals(-finished.exit_code).name}."
    return f"Exit code: {finished.exit_code}"


def _result(finished: Finished, output: HeadTail, timeout: float, env: ToolEnv) -> ToolResult:
    status = _status(finished, timeout)
    for_model = output.render(env.limits.output_max_chars).rstrip("\n") or "(no output)"
    for_ui = output.render(env.limits.stream_max_chars).rstrip("\n")
    return ToolResult(
        output=f"{for_model}\n\n{status}",
        is_error=finished.exit_code != 0,
        content=(TextBlock(f"{for_ui}\n\n{status}" if for_ui else status),),
        raw_output={
            "exit_code": finished.exit_code,
            "timed_out": finished.timed_out,
            "output_chars": output.total,
            "truncated": output.total > env.limits.output_max_chars,
        },
    )


async def _start_background(prepared: PreparedCommand, command: str, env: ToolEnv) -> ToolResult:
    started = await env.processes.start(prepared, command, env.scratch_dir())
    return ToolResult(
        output=(
            f"Started in the background as {started.id} (pid {started.pid}). Its output "
            f"goes to {started.log_path}; read that file to see it. It runs until it exits "
            "or the session ends."
        ),
        raw_output={"background_id": started.id, "pid": started.pid, "log": started.log_path},
    )
