"""The budget notices: one-shot words loopd adds about a session's budgets (the
context window's, a turn's cost and actions), shown to the person at once and read
by the model with the next message it is sent (beside a prompt, or riding with the
step's tool results). Kept until the model reads them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from loopd.engine.guard import LoopVerdict


@dataclass(slots=True)
class Notices:
    say: Callable[[str], Awaitable[None]]
    pending: list[str] = field(default_factory=list)

    async def add(self, notice: str | None) -> None:
        if notice:
            self.pending.append(notice)
            await self.say(f"[{notice}]")

    async def spending(self, verdict: LoopVerdict) -> None:
        """The loop guard's warning, when a spending it judged brought one."""
        if verdict.status == "warn":
            await self.add(f"Loop guard: {verdict.reason} in this turn.")

    def take(self) -> list[str]:
        taken, self.pending = self.pending, []
        return taken
