"""`bash`: run a shell command in the working directory, through the sandbox.

The command is `bash -c COMMAND`, handed to the session's `CommandSandbox` to be
contained and then spawned as its own process group (see `processes`). Its output
(stdout and stderr merged, in the order written) goes several ways, each bounded
(see `loopd.tools.output`): the person sees it live as it arrives, through
`progress`, and its head and tail at the end; the model gets the head and the tail
with a note of how much was cut from the middle, because the start (what ran) and
the end (the error, the summary) are where the information is; and the whole of it
goes to a file under the session's data dir, named wherever it was cut.

Background commands belong to the session: they write to a log file the model can
read, and they are stopped when the session's env closes.

Two escalations, each declared so the policy can put it to the person, and each used
only when the call's `Grant` says it was allowed (never on the model's word alone):
`"network": true` runs the command with the network on; `"sandbox": false` runs it
outside the OS sandbox, the retry of a command the sandbox refused. A sandboxed run
that fails with an error that looks like the sandbox's doing says so in its result,
and names the escalation that would lift it.

When the prompting editor has terminals (ACP `terminal/*`), a foreground command
runs in one of them instead, so the person watches it there; the editor spawns it,
so that happens only when containment survives the hand-over (see `editor_argv`).
"""

from __future__ import annotations

import asyncio
import re
import signal
from dataclasses import replace
from typing import Any, ClassVar

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.executables import find_program
from loopd.policy.commands import is_safe_command
from loopd.policy.grants import Grant, current_grant
from loopd.policy.secrets import SECRET_DIR_NAMES, is_secret_name
from loopd.policy.tiers import Tier
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import TerminalContent, TextBlock, ToolKind
from loopd.sandbox.base import CommandSandbox, CommandSpec, PreparedCommand
from loopd.sandbox.landlock_syscalls import die_with_parent
from loopd.sandbox.netgate import Lease
from loopd.tools.access import EditorTerminals
from loopd.tools.base import Args, failure
from loopd.tools.env import RUNNING_CALL, ToolEnv
from loopd.tools.output import HeadTail, LiveView, Spill
from loopd.tools.processes import Finished, run_captured, started
from loopd.tools.schema import arguments, flag, text


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
        "Commands run in a sandbox: only the workspace is writable and the network is "
        "off. Set network to true for a command that needs the network (the user may be "
        "asked). Only after a command failed because the sandbox blocked it, you may "
        "retry it with sandbox set to false: the user is always asked. "
        "Prefer the read, edit, glob and grep tools over cat, sed, find and grep."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(
        ["command"],
        command=text("The command."),
        timeout={"type": "number", "minimum": 0.1, "description": "Seconds."},
        background=flag("Run detached; default false."),
        network=flag("Needs the network; default false."),
        sandbox=flag("false: run outside the sandbox (always asks); default true."),
    )

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        command: str = args["command"]
        _timeout(args, env)
        unsandboxed = args.get("sandbox") is False
        where = " outside the sandbox" if unsandboxed else ""
        return Declaration(
            title=f"Run `{command}`{where}",
            kind=self.kind,
            command=command,
            network=args.get("network", False),
            unsandboxed=unsandboxed,
        )

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        grant = current_grant()
        unsandboxed = args.get("sandbox") is False
        if unsandboxed and not grant.unsandboxed:
            return failure("Running outside the sandbox was not approved for this call.")
        sandbox = env.outside if unsandboxed else env.sandbox
        gate = env.network if not unsandboxed and sandbox.tier in _PROXY_TIERS else None
        if gate is None:
            return await _command(args, env, progress, sandbox, None)
        title = f"`{args['command']}`"
        if args.get("background", False):
            lease = await gate.background_lease(RUNNING_CALL.get(), title)
            return await _command(args, env, progress, sandbox, lease)
        async with gate.lease(RUNNING_CALL.get(), title) as lease:
            return await _command(args, env, progress, sandbox, lease)


async def _command(
    args: Args, env: ToolEnv, progress: ToolProgress, sandbox: CommandSandbox, lease: Lease | None
) -> ToolResult:
    """Run the command in `sandbox`; with a `lease`, its network is the lease's proxy."""
    command: str = args["command"]
    timeout = _timeout(args, env)
    grant = current_grant()
    network = bool(args.get("network", False)) and grant.network and lease is None
    proxy = lease.socket if lease is not None else None
    spec = CommandSpec(("bash", "-c", command), env.cwd, env.roots, network, proxy)
    prepared = await asyncio.to_thread(sandbox.prepare, spec)  # walks the tree for masks
    if not is_safe_command(command, sandboxed=sandbox.tier != "none"):
        env.changes.ledger.note()  # it may write anything: a check before it is stale
    if args.get("background", False):
        return await _start_background(prepared, command, env)
    terminals, argv = env.editor_terminals(), editor_argv(prepared)
    terminal_id: str | None = None
    kept = ""
    if terminals is not None and argv is not None:
        started(prepared)  # beyond loopd's sight from here on
        finished, output, terminal_id = await _run_in_editor(
            terminals, argv, prepared.cwd, timeout, env, progress
        )
    else:
        finished, output, kept = await _run_here(prepared, timeout, env, progress)
    notes = _sandbox_notes(command, finished, output, sandbox.tier, grant, lease)
    result = _result(finished, output, timeout, env, notes, kept, lease)
    if terminal_id is not None:  # the editor keeps showing the terminal
        result = replace(result, content=(TerminalContent(terminal_id),))
    return result


async def _run_here(
    prepared: PreparedCommand, time_limit: float, env: ToolEnv, progress: ToolProgress
) -> tuple[Finished, HeadTail, str]:
    """Run locally; also returns where the full output was kept ("" if not cut)."""
    limits = env.limits
    output = _head_tail(env)
    spill = Spill(env.output_file(), limits.spill_max_bytes)
    live = LiveView(progress, limits.live_max_chars, limits.live_budget_chars, spill.path or "")

    async def on_output(text: str) -> None:
        output.append(text)
        spill.write(text)
        await live.update(output)

    try:
        finished = await run_captured(
            prepared,
            clock=env.clock,
            time_limit=time_limit,
            grace=limits.kill_grace,
            on_output=on_output,
        )
    finally:
        cut = output.total > min(limits.output_max_chars, limits.shown_max_chars)
        kept = spill.finish(keep=cut)
    return finished, output, kept or ""


def _head_tail(env: ToolEnv) -> HeadTail:
    limits = env.limits
    return HeadTail(2 * max(limits.output_max_chars, limits.shown_max_chars, limits.live_max_chars))


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
    env_binary = find_program("env", prepared.env.get("PATH"), outside=(prepared.cwd,))
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
) -> tuple[Finished, HeadTail, str | None]:
    """The editor streams the output itself (`terminal` content); the model gets
    what the editor kept, head and tail as for a local run."""
    shown: list[str] = []

    async def on_start(terminal_id: str) -> None:
        shown.append(terminal_id)
        await progress((TerminalContent(terminal_id),))

    output = _head_tail(env)
    try:
        async with asyncio.timeout(time_limit):
            run = await terminals.run(argv, cwd, {}, on_start, env.limits.shown_max_chars)
    except TimeoutError:
        finished = Finished(exit_code=None, timed_out=True)
    else:
        output.append(run.output)
        finished = Finished(_exit_code(run.exit_code, run.signal), timed_out=False)
    return finished, output, shown[0] if shown else None


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


# Errors a sandbox produces: writes outside the writable roots, blocked syscalls, and a
# network that is not there. Matched case-insensitively against the output's text.
_FS_DENIALS = re.compile(
    r"read-only file system|permission denied|operation not permitted|device or resource busy",
    re.I,
)
_NET_DENIALS = re.compile(
    r"network is unreachable|connection refused|could not resolve|name or service not known"
    r"|temporary failure in name resolution|no address associated|couldn't connect"
    r"|(?:connect\w*|/dev/(?:tcp|udp)/\S+):? (?:permission denied|operation not permitted)",
    re.I,
)
_SOCKETS = re.compile(r"\bsocket|\.sock\b|AF_UNIX", re.I)
_PROXY_TIERS = frozenset(t.value for t in Tier if t.binds_proxy)
_CONTAINING_TIERS = ("bwrap", "bwrap+landlock", "landlock", "netns")
_MASKING_TIERS = ("bwrap", "bwrap+landlock")


def _sandbox_notes(
    command: str,
    finished: Finished,
    output: HeadTail,
    tier: str,
    grant: Grant,
    lease: Lease | None = None,
) -> str:
    """What the person and the model should know about the sandbox's part in this
    result: a failure that looks like its refusal, the proxy's connections, and
    secrets it masked."""
    if tier not in _CONTAINING_TIERS:
        return ""
    lines = output.render(64 * 1024).splitlines()
    network = [line for line in lines if _NET_DENIALS.search(line)]
    files = [line for line in lines if _FS_DENIALS.search(line) and line not in network]
    notes: list[str] = []
    unix = any(_SOCKETS.search(line) for line in lines) and any(
        "operation not permitted" in line.lower() for line in lines
    )
    if finished.exit_code not in (0, None) and unix and tier != "netns":
        notes.append(
            f"The {tier} sandbox refuses Unix sockets (databases, Docker, agents). The "
            "user can allow one in their config ([sandbox] allow_unix_sockets); do not "
            "work around it."
        )
    elif finished.exit_code not in (0, None):
        if network and not grant.network and lease is None:
            notes.append(
                f"The {tier} sandbox has the network off. If the command needs it, run it "
                'again with "network": true; the user may be asked.'
            )
        if files:
            notes.append(
                f"This failure looks like the {tier} sandbox refusing it: outside the "
                "workspace, files are read-only; inside it, so are protected paths (git's "
                "config and hooks, .loopd, editor settings folders such as .vscode and "
                ".zed), and they and the git directory cannot be renamed or removed. "
                'Only if the command truly needs that, run it again with "sandbox": false; '
                "the user is always asked."
            )
    if lease is not None and lease.requests:
        notes.append(_proxy_notes(lease))
    if tier in _MASKING_TIERS and _mentions_secret(command):
        notes.append(
            f"Secret files (.env, keys, ~/.ssh and other credentials) are hidden from "
            f"commands in the {tier} sandbox (empty or unreadable); do not try to read them "
            "another way: ask the user for what you need."
        )
    return "\n".join(notes)


def _proxy_notes(lease: Lease) -> str:
    """Each connection with its verdict and rule; after a refusal, what to do."""
    report = lease.report()
    if any(r.verdict == "refused" for r in lease.requests):
        report += (
            "\nThe network is reachable only through loopd's proxy, host by host "
            "([sandbox] allowed_domains); a refused host stays refused. If the task needs "
            "it, tell the user which host to allow; do not work around the proxy."
        )
    return report


def _mentions_secret(command: str) -> bool:
    for word in re.split(r"[\s'\"=;&|<>()]+", command):
        parts = [p for p in word.split("/") if p]
        if parts and (is_secret_name(parts[-1]) or SECRET_DIR_NAMES & set(parts)):
            return True
    return False


def _result(
    finished: Finished,
    output: HeadTail,
    timeout: float,
    env: ToolEnv,
    notes: str = "",
    kept: str = "",
    lease: Lease | None = None,
) -> ToolResult:
    """The model reads head and tail with a hint to narrow the command; the person
    sees a larger head and tail, and where the whole output is when it was cut."""
    status = _status(finished, timeout) + (f"\n{notes}" if notes else "")
    for_model = output.render(env.limits.output_max_chars).rstrip("\n") or "(no output)"
    for_ui = output.render(env.limits.shown_max_chars, kept).rstrip("\n")
    raw_output: dict[str, Any] = {
        "exit_code": finished.exit_code,
        "timed_out": finished.timed_out,
        "output_chars": output.total,
        "truncated": output.total > env.limits.output_max_chars,
    }
    if kept:
        raw_output["full_output"] = kept
    if lease is not None:
        raw_output["network"] = [r.to_json() for r in lease.requests]
    return ToolResult(
        output=f"{for_model}\n\n{status}",
        is_error=finished.exit_code != 0,
        content=(TextBlock(f"{for_ui}\n\n{status}" if for_ui else status),),
        raw_output=raw_output,
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
