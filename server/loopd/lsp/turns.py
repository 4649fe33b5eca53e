"""The turns one LSP connection started, each with its progress bar.

Every way of prompting (the `loopd/session/prompt` request, the `loopd.ask` command,
a code action) runs through `Turns.run`, so each turn gets one `$/progress` bar
(title, "Queued" while it waits behind another turn, then the current step or tool;
cancellable) and three ways to be cancelled that all end the same way:
`$/cancelRequest` on the prompt request, the `loopd.cancel` command naming it, and
the bar's cancel button. Cancelling a turn cancels that turn alone: the running one
ends with `cancelled`, a queued one leaves the queue; the others go on.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from lsprotocol import types
from pygls.progress import Progress

from loopd.lsp.link import LspLink
from loopd.protocol.events import Prompt
from loopd.protocol.turns import Outcome
from loopd.sessions.manager import SessionManager

log = logging.getLogger(__name__)

KEEP_FINISHED = 20


@dataclass(eq=False, slots=True)
class Turn:
    id: str
    session_id: str
    title: str
    token: str | None = None
    step: str | None = None
    outcome: Outcome | None = None
    queued: bool = False
    work: asyncio.Future[Outcome] | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"turnId": self.id, "sessionId": self.session_id, "title": self.title}
        if self.outcome is None:
            out["state"] = "queued" if self.queued else "running"
            if self.step:
                out["step"] = self.step
        else:
            out["state"] = "ended"
            out["stopReason"] = self.outcome.stop_reason
            if self.outcome.error:
                out["error"] = self.outcome.error
            if self.outcome.verification is not None:
                out["verification"] = self.outcome.verification.to_wire()
        return out


class TurnHost(Protocol):
    """What the turns need of their connection (`loopd.lsp.base.LoopdServer`): the
    manager, once started (turns only run after that), and the client's progress."""

    @property
    def manager(self) -> SessionManager: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    @property
    def work_done_progress(self) -> Progress: ...


@dataclass(eq=False, slots=True)
class Turns:
    server: TurnHost
    link: LspLink
    running: dict[str, Turn] = field(default_factory=dict)
    finished: OrderedDict[str, Turn] = field(default_factory=OrderedDict)
    _background: set[asyncio.Task[Any]] = field(default_factory=set)

    def new(self, session_id: str, prompt: Prompt) -> Turn:
        title = (prompt.text.strip().splitlines() or ["(no text)"])[0][:80]
        return Turn(f"turn_{uuid.uuid4().hex[:12]}", session_id, title)

    def start(self, turn: Turn, prompt: Prompt) -> None:
        """Run `turn` in the background (commands answer before the turn ends)."""
        self.spawn(self.run(turn, prompt))

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._reap)

    def _reap(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a background turn failed", exc_info=task.exception())

    async def run(self, turn: Turn, prompt: Prompt) -> Outcome:
        """Run one turn to its end. Cancelling the caller cancels the turn."""
        self.running[turn.id] = turn
        self.link.start_of_turn(turn.session_id, prompt.text)
        try:
            turn.queued = self.server.manager.busy(turn.session_id)
            await self._begin_progress(turn)
            work = turn.work = asyncio.ensure_future(
                self.server.manager.prompt(
                    turn.session_id, prompt, self.link, on_start=lambda: self._started(turn)
                )
            )
            try:
                turn.outcome = await asyncio.shield(work)
            except asyncio.CancelledError:
                work.cancel()
                await asyncio.wait({work})
                turn.outcome = Outcome(turn_id="", stop_reason="cancelled")
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # our caller gave up (its request was cancelled)
            return turn.outcome
        finally:
            self._end(turn)

    def _started(self, turn: Turn) -> None:
        """The turn left the queue."""
        if turn.queued:
            turn.queued = False
            self._report(turn, "Running")

    async def cancel(self, turn: Turn) -> None:
        """This turn alone: the running one ends, a queued one leaves the queue."""
        if turn.work is not None:
            turn.work.cancel()

    def on_step(self, session_id: str, step: str) -> None:
        for turn in self.running.values():
            if turn.session_id == session_id and not turn.queued and step != turn.step:
                turn.step = step
                self._report(turn, step)

    def _report(self, turn: Turn, message: str) -> None:
        if turn.token is not None:
            report = types.WorkDoneProgressReport(message=message)
            self.server.work_done_progress.report(turn.token, report)

    def status(self) -> list[dict[str, Any]]:
        return [t.to_wire() for t in (*self.running.values(), *self.finished.values())]

    def last_seal(self, session_id: str | None) -> dict[str, Any] | None:
        """The newest finished turn's seal in `session_id`, for a status line."""
        for turn in reversed(self.finished.values()):
            if turn.session_id == session_id and turn.outcome and turn.outcome.verification:
                return turn.outcome.verification.to_wire()
        return None

    def find(self, turn_id: str) -> Turn | None:
        return self.running.get(turn_id) or self.finished.get(turn_id)

    async def close(self) -> None:
        for turn in list(self.running.values()):
            await self.cancel(turn)
        for task in list(self._background):
            task.cancel()

    async def _begin_progress(self, turn: Turn) -> None:
        window = self.server.client_capabilities.window
        if not (window and window.work_done_progress):
            return
        token = f"loopd/{turn.id}"
        progress = self.server.work_done_progress
        try:
            await progress.create_async(token)
        except Exception:
            log.warning("the client refused a progress bar", exc_info=True)
            return
        turn.token = token
        begin = types.WorkDoneProgressBegin(
            title=f"loopd: {turn.title}",
            message="Queued behind the running turn" if turn.queued else "Starting",
            cancellable=True,
        )
        progress.begin(token, begin)
        progress.tokens[token].add_done_callback(lambda f: self._progress_cancelled(turn, f))

    def _progress_cancelled(self, turn: Turn, future: Future[Any]) -> None:
        if future.cancelled() and turn.outcome is None:
            self.spawn(self.cancel(turn))

    def _end(self, turn: Turn) -> None:
        self.running.pop(turn.id, None)
        reason: str = turn.outcome.stop_reason if turn.outcome else "cancelled"
        summary = f"[turn] {turn.id} ended: {reason}"
        if turn.outcome and turn.outcome.error:
            summary += f" ({turn.outcome.error})"
        seal = turn.outcome.verification if turn.outcome else None
        if seal is not None:
            reason += f"; {seal.summary()}"
            summary += f"; {seal.summary()}"
        self.link.end_of_turn(turn.session_id, summary)
        if turn.token is not None:
            self.server.work_done_progress.end(
                turn.token, types.WorkDoneProgressEnd(message=reason)
            )
            self.server.work_done_progress.tokens.pop(turn.token, None)
        self.finished[turn.id] = turn
        while len(self.finished) > KEEP_FINISHED:
            self.finished.popitem(last=False)
