"""The terminals loopd serves a child ACP agent (`terminal/*`), run the way the native
`bash` tool runs a command.

A terminal is a command execution, so it crosses the same two gates as a native one:

1. a `TerminalGate` (the runtime's: loopd's rules, mode and "always" answers, and the
   person when they say ask) decides the command line before anything runs; a
   refusal is a `TerminalRefused`, which the connection answers as a JSON-RPC error;
2. the session's `CommandSandbox` prepares `bash -c LINE` (writes confined to the
   session's folders, network off, secrets hidden, a scrubbed environment) and it is
   spawned as its own process group through `loopd.tools.processes`, stdin closed.

What the child asks for is never trusted: its `cwd` is canonicalised and must be a
folder inside the session's roots that is not a secret; the variables it passes are
filtered (`exports`) and become an `export` at the start of the line, so the policy
and the person decide on exactly what runs, and the sandbox's launcher never sees
them; at most `max_terminals` exist at once. Output is kept as the native tool keeps
it, head and tail (`HeadTail`), and handed back within the child's `outputByteLimit`,
itself capped by loopd's `output_max_chars`.

The person sees a terminal as a native command: a child's tool call that shows one of
these terminals (`terminal` content, an id only loopd knows) shows its output instead,
live, within the live budget (`shown`); a terminal loopd had to ask about gets its own
tool call. Every terminal is stopped (its whole group) on `kill_all` (a cancelled
turn) and `aclose` (the session closes, the child exits).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import re
import shlex
import signal
import subprocess
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from loopd.engine.ports import Clock
from loopd.groups import signal_group
from loopd.policy.paths import PathPolicy
from loopd.protocol.events import (
    SessionEvent,
    TerminalContent,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    ToolContent,
)
from loopd.sandbox.base import SAFE_ENV_KEYS, CommandSandbox, CommandSpec
from loopd.tools.env import ToolLimits
from loopd.tools.output import HeadTail, LiveView
from loopd.tools.processes import Spawned, first_of, spawn, stop

log = logging.getLogger(__name__)

MAX_TERMINALS = 8  # held at once by one session (running or exited, until released)
KEPT_RELEASED = 16  # released terminals whose last output a tool call may still show
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|PRIVATE", re.I)


class TerminalRefused(Exception):
    """The terminal may not be created; the message says why, for the agent."""


class UnknownTerminal(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class Exit:
    code: int | None
    signal: str | None


@dataclass(frozen=True, slots=True)
class Snapshot:
    output: str
    truncated: bool
    exit: Exit | None


class TerminalGate(Protocol):
    async def admit(self, line: str, cwd: str, card: str) -> bool:
        """Decide `line` before it runs in `cwd`: raises `TerminalRefused`, or returns
        whether the person was shown the command as tool call `card` (asked)."""
        ...


def command_line(command: str, args: Sequence[str]) -> str:
    """ACP's `command` and `args` as one shell line: `command` alone is a line (agents
    send `ls -la | head`), with `args` each word is quoted, so `bash -c` runs exactly
    that argv."""
    return shlex.join([command, *args]) if args else command


def exports(env: Mapping[str, str], base_env: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """The child's variables as an `export ...; ` prefix, and the names dropped: a name
    that is not a shell name or looks like a credential's, and a value holding one of
    loopd's own secrets (any variable of its environment but the harmless ones), so a
    key the child knows cannot be handed to a command under another name."""
    secrets = [v for k, v in base_env.items() if k not in SAFE_ENV_KEYS and len(v) >= 8]
    kept: list[str] = []
    dropped: list[str] = []
    for name, value in env.items():
        if not _NAME.match(name) or _SECRET_NAME.search(name) or any(s in value for s in secrets):
            dropped.append(name)
        else:
            kept.append(f"{name}={shlex.quote(value)}")
    return (f"export {' '.join(kept)}; " if kept else ""), tuple(dropped)


def within(output: HeadTail, limit: int) -> tuple[str, bool]:
    """The output in at most `limit` UTF-8 bytes: all of it, or the head and tail with
    a note of the cut, or (when even the note does not fit) the tail, cut at a
    character boundary. The flag says something was cut."""
    whole = output.render(output.total)
    if output.total <= limit and len(whole.encode()) <= limit:
        return whole, False
    cap = limit
    while cap > 256:
        text = output.render(cap)
        size = len(text.encode())
        if size <= limit:
            return text, True
        cap -= size - limit
    tail = output.tail(limit).encode()[-limit:]
    return tail.decode("utf-8", "ignore"), True


def _exit_of(code: int | None) -> Exit:
    if code is not None and code < 0:
        return Exit(None, signal.Signals(-code).name)
    return Exit(code, None)


@dataclass(eq=False)
class _Terminal:
    id: str
    line: str
    child: Spawned
    output: HeadTail
    limit: int  # bytes handed back to the child
    live: LiveView | None = None
    cards: dict[str, tuple[ToolContent, ...]] = field(default_factory=dict)
    own_card: str | None = None
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    exit: Exit | None = None
    task: asyncio.Task[None] | None = None


class AcpTerminals:
    """One child's terminals. `sandbox()` is the session's sandbox now (it follows the
    mode); `emit` shows tool call updates to the person."""

    def __init__(
        self,
        *,
        gate: TerminalGate,
        sandbox: Callable[[], CommandSandbox],
        paths: PathPolicy,
        base_env: Mapping[str, str],
        limits: ToolLimits,
        clock: Clock,
        emit: Callable[[SessionEvent], Awaitable[None]],
        max_terminals: int = MAX_TERMINALS,
    ) -> None:
        self._gate, self._sandbox, self._paths = gate, sandbox, paths
        self._base_env, self._limits, self._clock, self._emit = base_env, limits, clock, emit
        self._max = max_terminals
        self._held: dict[str, _Terminal] = {}
        self._reserved = 0
        self._released: dict[str, str] = {}  # id -> its last output, for tool calls
        self._ids = itertools.count(1)
        self._closed = False

    # -- the five methods ---------------------------------------------------------------

    async def create(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> str:
        """Decide, then start; the id is returned once the command runs."""
        if self._closed:
            raise TerminalRefused("the session is closed")
        if len(self._held) + self._reserved >= self._max:
            raise TerminalRefused(
                f"at most {self._max} terminals at once: release one first (terminal/release)"
            )
        where = self._folder(cwd)
        prefix, dropped = exports(env or {}, self._base_env)
        if dropped:
            log.info("terminal variables dropped (secret or invalid): %s", ", ".join(dropped))
        line = prefix + command_line(command, args)
        terminal_id = f"term_{next(self._ids)}_{uuid.uuid4().hex[:8]}"  # unique in the thread
        self._reserved += 1
        try:
            shown = await self._gate.admit(line, where, terminal_id)
            if shown:
                await self._emit(ToolCallUpdated(terminal_id, status="in_progress"))
            try:
                await self._start(terminal_id, line, where, output_byte_limit, shown)
            except TerminalRefused as err:
                if shown:  # the person allowed it: say why it did not run
                    failed = (TextBlock(str(err)),)
                    await self._emit(ToolCallUpdated(terminal_id, "failed", content=failed))
                raise
        finally:
            self._reserved -= 1
        return terminal_id

    def output(self, terminal_id: str) -> Snapshot:
        t = self._get(terminal_id)
        text, cut = within(t.output, t.limit)
        return Snapshot(text, cut, t.exit)

    async def wait_for_exit(self, terminal_id: str) -> Exit:
        t = self._get(terminal_id)
        await t.exited.wait()
        assert t.exit is not None
        return t.exit

    async def kill(self, terminal_id: str) -> None:
        """Stop the command and its group; the terminal stays readable. One that
        exited is left alone: its group was killed then, and its pid may be reused."""
        t = self._get(terminal_id)
        if not t.exited.is_set():
            await stop(t.child, self._clock, self._limits.kill_grace)
            await t.exited.wait()

    async def release(self, terminal_id: str) -> None:
        """Kill when still running, then forget the id (its last output stays shown)."""
        t = self._get(terminal_id)
        await self.kill(terminal_id)
        del self._held[terminal_id]
        self._released[terminal_id] = self._final(t)
        while len(self._released) > KEPT_RELEASED:
            del self._released[next(iter(self._released))]

    async def kill_all(self) -> None:
        """Stop every running terminal (a cancelled turn); they stay readable."""
        held = list(self._held)
        await asyncio.gather(*(self.kill(t) for t in held), return_exceptions=True)

    async def aclose(self) -> None:
        """Stop and forget every terminal; no new one starts. Idempotent."""
        self._closed = True
        await self.kill_all()
        self._held.clear()

    # -- what the person sees ------------------------------------------------------------

    def shown(self, event: SessionEvent) -> SessionEvent:
        """A child's tool call showing one of these terminals, with the output in its
        place (kept live from here on); any other event as it is."""
        if not isinstance(event, ToolCallStarted | ToolCallUpdated) or not event.content:
            return event
        ids = {c.terminal_id for c in event.content if isinstance(c, TerminalContent)}
        mine = ids & (set(self._held) | set(self._released))
        if not mine:
            return event
        for terminal_id in mine & set(self._held):
            self._held[terminal_id].cards[event.tool_call_id] = event.content
        texts = {i: self._current(i) for i in mine}
        return replace(event, content=_filled(event.content, texts))

    def _current(self, terminal_id: str) -> str:
        t = self._held.get(terminal_id)
        if t is None:
            return self._released[terminal_id]
        if t.exit is not None:
            return self._final(t)
        return t.output.tail(self._limits.live_max_chars)

    def _final(self, t: _Terminal) -> str:
        shown = t.output.render(self._limits.shown_max_chars).rstrip("\n")
        status = _status(t.exit) if t.exit is not None else "Running."
        return f"{shown}\n\n{status}" if shown else status

    async def _show_live(self, t: _Terminal, content: tuple[ToolContent, ...]) -> None:
        [block] = content  # LiveView hands one text block
        assert isinstance(block, TextBlock)
        for card, template in list(t.cards.items()):
            filled = _filled(template, {t.id: block.text})
            await self._emit(ToolCallUpdated(card, content=filled))

    async def _show_exit(self, t: _Terminal) -> None:
        final = self._final(t)
        for card, template in list(t.cards.items()):
            filled = _filled(template, {t.id: final})
            if card == t.own_card:
                ok = t.exit is not None and t.exit.code == 0
                await self._emit(
                    ToolCallUpdated(card, status="completed" if ok else "failed", content=filled)
                )
            else:
                await self._emit(ToolCallUpdated(card, content=filled))

    # -- running ------------------------------------------------------------------------

    def _folder(self, cwd: str | None) -> str:
        """The canonical working folder: inside the session's roots, not a secret."""
        verdict = self._paths.check_read(cwd or self._paths.roots[0])
        if not verdict.ok:
            raise TerminalRefused(f"cwd refused: {verdict.reason}")
        if not os.path.isdir(verdict.path):
            raise TerminalRefused(f"cwd refused: {verdict.path} is not a folder")
        return verdict.path

    async def _start(
        self, terminal_id: str, line: str, cwd: str, limit: int | None, card: bool
    ) -> None:
        """Prepare in the sandbox and spawn; `card`: the terminal shows in its own tool
        call (the one its question was shown in)."""
        cap = self._limits.output_max_chars
        spec = CommandSpec(("bash", "-c", line), cwd, self._paths.roots, network=False)
        prepared = await asyncio.to_thread(self._sandbox().prepare, spec)
        if self._closed:
            raise TerminalRefused("the session is closed")
        try:
            child = await spawn(prepared, subprocess.PIPE)
        except OSError as err:
            raise TerminalRefused(f"the command could not start: {err}") from err
        keep = 2 * max(cap, self._limits.shown_max_chars, self._limits.live_max_chars)
        wanted = limit if limit is not None and limit > 0 else cap
        t = _Terminal(terminal_id, line, child, HeadTail(keep), min(wanted, cap))
        if card:
            t.own_card = terminal_id
            t.cards[terminal_id] = (TerminalContent(terminal_id),)
        t.live = LiveView(
            lambda content: self._show_live(t, content),
            self._limits.live_max_chars,
            self._limits.live_budget_chars,
        )
        self._held[terminal_id] = t
        t.task = asyncio.create_task(self._supervise(t), name=f"loopd-{terminal_id}")

    async def _supervise(self, t: _Terminal) -> None:
        """Collect the output until the leader exits; then the stragglers left in its
        group are killed (as after a native foreground command) and the output they
        leave is read, for a grace at most (a process that left the group may hold
        the pipe)."""

        async def on_output(text: str) -> None:
            t.output.append(text)
            if t.cards and t.live is not None:
                await t.live.update(t.output)

        pump = asyncio.ensure_future(t.child.pump(on_output))
        try:
            await t.child.wait()
            signal_group(t.child.pid, signal.SIGKILL)
            await first_of(pump, self._clock, self._limits.kill_grace)
        finally:
            pump.cancel()
            assert t.child.transport is not None
            t.child.transport.close()
            t.exit = _exit_of(t.child.returncode)
            t.exited.set()
        with contextlib.suppress(Exception):
            await self._show_exit(t)

    def _get(self, terminal_id: str) -> _Terminal:
        t = self._held.get(terminal_id)
        if t is None:
            raise UnknownTerminal(terminal_id)
        return t


def _filled(content: tuple[ToolContent, ...], texts: Mapping[str, str]) -> tuple[ToolContent, ...]:
    return tuple(
        TextBlock(texts[c.terminal_id])
        if isinstance(c, TerminalContent) and c.terminal_id in texts
        else c
        for c in content
    )


def _status(exit: Exit) -> str:
    if exit.signal is not None:
        return f"Killed by signal {exit.signal}."
    return f"Exit code: {exit.code}"
