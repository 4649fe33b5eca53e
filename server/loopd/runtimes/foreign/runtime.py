"""What the Claude Code and Codex runtimes share: one long-lived CLI child per
session, spoken to in JSON lines, under a turn discipline that never hangs a turn.

`ForeignRuntime` owns the lifecycle and every failure path; a CLI's subclass owns
only its protocol: the command line (`_argv`, `_env`), a handshake once started
(`_started`), how a turn begins (`_begin`), what each stdout object means
(`_dispatch`), how to interrupt (`_send_interrupt`) and how a finished turn becomes
an `Outcome` (`_finish`).

The rules both get from here:
- one turn at a time; the child is started (or restarted, after a crash or a change
  that needs new flags) on the turn that needs it;
- waiting is bounded: a child silent for `stall_timeout` (time spent waiting on the
  person excepted) is stopped, and so is one whose request goes unanswered;
- cancel is an interrupt; one not honoured in `cancel_timeout` stops the child, and
  a turn whose child is stopped while cancelling ends `cancelled`;
- a child that dies fails every pending request and the turn with its exit report;
- a failure is a visible message plus a stop reason, never an exception;
- the person is asked through the session's approver; one that fails denies.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from loopd.config.trust.pins import Pins
from loopd.executables import find_program, program_env
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.errors import ConfigError, RuntimeFailure
from loopd.protocol.events import AgentMessageChunk, ConfigOption, Notice, Prompt
from loopd.protocol.turns import Outcome
from loopd.runtimes.base import RuntimeContext, refuse_moved
from loopd.runtimes.foreign.jsonl import JsonlProcess, wait_while_active
from loopd.runtimes.options import (
    CLI_DEFAULT_EFFORT,
    DEFAULT_MODE,
    check_effort,
    check_mode,
    effort_option,
    mode_option,
    model_option,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ForeignSettings:
    """How to run a CLI. `binary` None: its command on PATH. `env` is added to the
    inherited environment: `inherit`, the environment of the editor the session
    came from (a daemon serves many, and one's keys never reach another's CLI), or
    this process's when None. `extra_args` follow loopd's own flags. `models` and
    `efforts` (with their defaults) are what the catalog entry offers. `pins`: the
    CLI does not start once one of them moved (`loopd.config.trust.pins`)."""

    binary: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    inherit: Mapping[str, str] | None = None
    extra_args: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    default_model: str | None = None
    efforts: tuple[str, ...] = ()
    default_effort: str | None = None
    stall_timeout: float = 300.0
    cancel_timeout: float = 10.0
    pins: Pins = ()  # what the trusted workspace file runs, as trusted

    def inherited(self) -> dict[str, str]:
        """The environment the CLI starts from, before loopd's own variables."""
        return dict(os.environ if self.inherit is None else self.inherit)


@dataclass(frozen=True, slots=True)
class Cli:
    """A CLI as the person knows it, for messages: its name, command, and install."""

    product: str
    command: str
    install: str


class ForeignRuntime(ABC):
    CLI: ClassVar[Cli]

    def __init__(self, settings: ForeignSettings, context: RuntimeContext) -> None:
        self._settings = settings
        self._ctx = context
        self._mode = check_mode(context.config.get("mode", DEFAULT_MODE))
        self._model = context.config.get("model") or settings.default_model
        effort = context.config.get("thought_level") or settings.default_effort
        self._effort = effort if effort in settings.efforts else CLI_DEFAULT_EFFORT
        self._proc: JsonlProcess | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stale = False  # the running child has flags that no longer hold
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Mapping[str, Any]]] = {}
        self._asking: dict[Any, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._turn: asyncio.Future[Mapping[str, Any]] | None = None
        self._activity = 0
        self._retries = 0
        self._failure: str | None = None
        self._cancelled = False
        self._lock = asyncio.Lock()

    # -- the Runtime contract -----------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> Outcome:
        async with self._lock:
            turn_id = str(uuid.uuid4())
            self._cancelled, self._retries, self._failure = False, 0, None
            try:
                await self._ensure_running()
                self._turn = asyncio.get_running_loop().create_future()
                await self._begin(prompt)
                result = await self._await_turn(self._turn)
            except RuntimeFailure as exc:
                return await self._failed(turn_id, str(exc))
            finally:
                self._turn = None
            return await self._finish(turn_id, result)

    async def cancel(self) -> None:
        turn = self._turn
        if turn is None or turn.done():
            return
        self._cancelled = True
        await self._interrupt()
        for task in list(self._asking.values()):
            task.cancel()
        with contextlib.suppress(TimeoutError, RuntimeFailure):
            await asyncio.wait_for(asyncio.shield(turn), self._settings.cancel_timeout)
        if not turn.done():
            log.warning("%s ignored the interrupt; stopping the process", self.CLI.product)
            await self._stop_process()

    async def set_config(self, option_id: str, value: str) -> None:
        match option_id:
            case "mode":
                self._mode = check_mode(value)
            case "model":
                self._model = value
            case "thought_level":
                self._effort = check_effort(value, self._settings.efforts)
            case _:
                raise ConfigError(f"the {self.CLI.command} runtime has no option {option_id!r}")
        await self._apply(option_id)

    def config_options(self) -> tuple[ConfigOption, ...]:
        options = [mode_option(self._mode)]
        if self._model:
            options.append(model_option(self._model, self._settings.models))
        if self._settings.efforts:
            options.append(effort_option(self._effort, self._settings.efforts))
        return tuple(options)

    async def close(self) -> None:
        await self._stop_process()

    @abstractmethod
    def state(self) -> Mapping[str, Any]:
        """The CLI's own conversation id: a runtime reopened with it resumes there."""

    # -- what each CLI says its own way -------------------------------------------------

    @abstractmethod
    def _argv(self, binary: str) -> list[str]: ...

    @abstractmethod
    def _env(self) -> dict[str, str]: ...

    async def _started(self) -> None:  # noqa: B027 (optional hook)
        """A handshake with a freshly started child. Default: none."""

    @abstractmethod
    async def _begin(self, prompt: Prompt) -> None:
        """Start a turn; its end arrives by `_turn` being resolved."""

    @abstractmethod
    async def _dispatch(self, message: Mapping[str, Any]) -> None: ...

    @abstractmethod
    async def _send_interrupt(self) -> None: ...

    @abstractmethod
    async def _finish(self, turn_id: str, result: Mapping[str, Any]) -> Outcome: ...

    @abstractmethod
    def _cancelled_result(self) -> Mapping[str, Any]:
        """What the turn ends with when the child is stopped while cancelling."""

    async def _apply(self, option_id: str) -> None:  # noqa: B027 (optional hook)
        """An option changed: tell a running child, or mark it `_stale`. Default:
        nothing (the next turn carries it)."""

    # -- the process --------------------------------------------------------------------

    @property
    def _effort_flag(self) -> str | None:
        """The chosen effort for the CLI, None where it decides itself."""
        return None if self._effort == CLI_DEFAULT_EFFORT else self._effort

    @property
    def _alive(self) -> bool:
        return self._proc is not None and self._proc.alive

    async def _ensure_running(self) -> None:
        if self._alive and not self._stale:
            return
        await self._stop_process()
        self._stale = False
        cli = self.CLI
        refuse_moved(self._settings.pins)
        env = program_env(self._env(), self._ctx.roots)
        command = self._settings.binary or cli.command
        binary = find_program(command, env["PATH"], outside=self._ctx.roots)
        if binary is None:
            raise RuntimeFailure(
                f"{cli.product} is not installed: no `{command}` on PATH's absolute "
                f"entries outside the workspace. Install it ({cli.install}) or configure "
                "its path."
            )
        self._proc = await JsonlProcess.spawn(
            self._argv(binary), cwd=self._ctx.cwd, env=env, name=cli.product
        )
        self._reader = asyncio.create_task(self._read(self._proc))
        await self._started()

    async def _stop_process(self) -> None:
        proc, reader = self._proc, self._reader
        self._proc, self._reader = None, None
        for task in list(self._asking.values()):
            task.cancel()
        if proc is not None:
            await proc.close(grace=self._settings.cancel_timeout / 3)
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        self._fail_pending(RuntimeFailure(f"{self.CLI.product} was stopped."))

    async def _read(self, proc: JsonlProcess) -> None:
        try:
            async for message in proc.messages():
                self._activity += 1
                await self._dispatch(message)
        except Exception:  # a bug here must end the turn, not hang it
            log.exception("%s reader failed", self.CLI.product)
        if proc is self._proc:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.close(), self._settings.cancel_timeout)
            self._fail_pending(RuntimeFailure(await proc.exit_report()))

    # -- requests, and what answers them ------------------------------------------------

    async def _request(
        self, key: Any, message: Mapping[str, Any], *, within: float, what: str
    ) -> Mapping[str, Any]:
        """Send a request and wait (at most `within` seconds) for `_answer(key, ...)`."""
        proc = self._proc
        if proc is None or not proc.alive:
            raise RuntimeFailure(f"{self.CLI.product} is not running.")
        answer = asyncio.get_running_loop().create_future()
        self._pending[key] = answer
        try:
            await proc.send(message)
            return await asyncio.wait_for(answer, within)
        except TimeoutError as exc:
            raise RuntimeFailure(f"{self.CLI.product} did not answer {what} in time.") from exc
        finally:
            self._pending.pop(key, None)

    def _answer(
        self, key: Any, result: Mapping[str, Any] | None = None, error: str | None = None
    ) -> None:
        answer = self._pending.get(key)
        if answer is None or answer.done():
            return
        if error is not None:
            answer.set_exception(RuntimeFailure(f"{self.CLI.product}: {error}"))
        else:
            answer.set_result(result or {})

    async def _send_quietly(self, message: Mapping[str, Any]) -> None:
        """A reply nobody waits on; a child gone meanwhile is the reader's to report."""
        if self._proc is not None:
            with contextlib.suppress(RuntimeFailure):
                await self._proc.send(message)

    async def _interrupt(self) -> None:
        """Ask the child to stop the turn; a child that cannot be asked is stopped."""
        try:
            await self._send_interrupt()
        except RuntimeFailure as exc:
            log.info("%s interrupt failed: %s", self.CLI.product, exc)
            await self._stop_process()

    def _count_retry(self, limit: int, failure: str) -> None:
        """Retry notices are harmless until there are more than `limit`: an endpoint
        that keeps failing would otherwise be retried for minutes, or forever. Then
        the failure is kept for the turn's message and the turn is interrupted."""
        self._retries += 1
        if self._retries > limit and self._failure is None:
            self._failure = failure
            self._in_background(self._interrupt())

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- asking the person --------------------------------------------------------------

    def _ask_in_background(
        self, key: Any, work: Coroutine[Any, Any, None], refusal: Mapping[str, Any]
    ) -> None:
        """Run a question to the person; `_withdraw(key)` cancels it (and its dialog).
        Should asking fail (a bug, an update that cannot be shown), `refusal` is sent
        instead: fail closed, and never leave the CLI waiting for an answer."""

        async def guarded() -> None:
            try:
                await work
            except Exception:
                log.exception("%s: asking failed; refusing", self.CLI.product)
                await self._send_quietly(refusal)

        task = asyncio.create_task(guarded())
        self._asking[key] = task
        task.add_done_callback(lambda _: self._asking.pop(key, None))

    def _withdraw(self, key: Any) -> None:
        task = self._asking.pop(key, None)
        if task is not None:
            task.cancel()

    async def _ask_person(self, question: ApprovalRequest) -> ApprovalDecision:
        try:
            return await self._ctx.approver.approve(question)
        except Exception:  # an approver that fails denies: fail closed
            log.exception("approver failed; denying")
            return ApprovalDecision.REJECT_ONCE

    # -- waiting and failing ------------------------------------------------------------

    async def _await_turn(self, turn: asyncio.Future[Mapping[str, Any]]) -> Mapping[str, Any]:
        try:
            return await wait_while_active(
                turn,
                activity=lambda: self._activity,
                waiting_on_person=lambda: bool(self._asking),
                stall_timeout=self._settings.stall_timeout,
            )
        except TimeoutError:
            await self._stop_process()
            seconds = int(self._settings.stall_timeout)
            raise RuntimeFailure(f"{self.CLI.product} stopped responding for {seconds}s.") from None

    def _fail_pending(self, error: RuntimeFailure) -> None:
        for answer in self._pending.values():
            if not answer.done():
                answer.set_exception(error)
        if self._turn is not None and not self._turn.done():
            if self._cancelled:
                self._turn.set_result(self._cancelled_result())
            else:
                self._turn.set_exception(error)

    async def _failed(self, turn_id: str, error: str) -> Outcome:
        if self._cancelled:
            return Outcome(turn_id=turn_id, stop_reason="cancelled")
        await self._say(error, "error")
        return Outcome(turn_id=turn_id, stop_reason="end_turn", error=error)

    async def _say(self, text: str, notice: Notice | None = None) -> None:
        await self._ctx.emitter.emit(AgentMessageChunk(text, f"loopd-{uuid.uuid4()}", notice))
