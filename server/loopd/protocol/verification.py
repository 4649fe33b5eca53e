"""The verification seal: what a turn ended knowing about the workspace's definition
of done (seed 000 `Report`, `Verification`, `VerificationOf`).

A turn's seal is one of five words every frontend shows the same way:

- `clean`: nothing was written; nothing to check;
- `passed`: the criteria ran after the last write and were met;
- `failed`: they ran after the last write and at least one was not met;
- `stale`: something was written after the last check, so no check speaks for the
  files as they are (the false "passed" this whole mechanism exists to prevent);
- `unavailable`: something was written and there is nothing that could check it.

`incomplete` is separate from the seal: the turn stopped re-entering because the
unmet set stopped shrinking, and says which criteria are still unmet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Seal = Literal["clean", "passed", "failed", "stale", "unavailable"]
CriterionState = Literal["met", "unmet", "unavailable"]


@dataclass(frozen=True, slots=True)
class CriterionResult:
    """One criterion as last checked. `output` is the command's output (head and
    tail), or why it could not run."""

    name: str
    state: CriterionState
    output: str = ""
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class Watch:
    """How far the check for protected writes looked: `files` were compared;
    `capped` says it stopped at its cap, so a write to a file past it went unseen
    (said, never implied away)."""

    files: int = 0
    capped: bool = False


@dataclass(frozen=True, slots=True)
class ProtectedWrites:
    """The protected paths a turn wrote (sorted, as shown), and how far it looked."""

    paths: tuple[str, ...] = ()
    watch: Watch = Watch()


@dataclass(frozen=True, slots=True)
class Verification:
    """The seal of one turn, with what it rests on. `protected_writes` are the
    protected paths written during the turn: shown to the person, never hidden;
    `watch` is how far the check for them looked."""

    seal: Seal
    criteria: tuple[CriterionResult, ...] = ()
    protected_writes: tuple[str, ...] = ()
    incomplete: bool = False
    cycles: int = 0  # how many times the turn re-entered on unmet criteria
    watch: Watch = Watch()

    def named(self, state: CriterionState) -> tuple[str, ...]:
        """The criteria in `state`, sorted: compared between cycles and read by people."""
        return tuple(sorted(c.name for c in self.criteria if c.state == state))

    @property
    def unmet(self) -> tuple[str, ...]:
        return self.named("unmet")

    @property
    def failed(self) -> bool:
        """A turn whose result must not be taken as success: `loopd run` exits 1."""
        return self.incomplete or self.seal == "failed"

    def summary(self) -> str:
        """One short line for a person (a chat line, a status bar, a progress end)."""
        if self.incomplete:
            head = f"incomplete: unmet {', '.join(self.unmet)}"
        else:
            head = _SEAL_WORDS[self.seal]
            if self.seal == "failed":
                head += f": unmet {', '.join(self.unmet)}"
        unavailable = self.named("unavailable")
        if unavailable and self.seal != "unavailable":
            head += f"; could not check {', '.join(unavailable)}"
        if self.protected_writes:
            head += f"; protected files written: {', '.join(self.protected_writes)}"
        if self.watch.capped:
            head += (
                f"; only the first {self.watch.files:,} files were checked for protected"
                " writes (the rest were not)"
            )
        return f"verification {head}"

    def to_wire(self) -> dict[str, Any]:
        """The JSON every frontend carries (ACP `_meta.loopd.verification`, the LSP
        turn status, `loopd run --json`)."""
        return {
            "seal": self.seal,
            "incomplete": self.incomplete,
            "unmet": list(self.unmet),
            "criteria": [
                {"name": c.name, "state": c.state, "exitCode": c.exit_code} for c in self.criteria
            ],
            "protectedWrites": list(self.protected_writes),
            "protectedWatched": {"files": self.watch.files, "capped": self.watch.capped},
            "cycles": self.cycles,
            "summary": self.summary(),
        }


_SEAL_WORDS: dict[Seal, str] = {
    "clean": "clean (nothing changed)",
    "passed": "passed",
    "failed": "failed",
    "stale": "stale (files changed after the last check)",
    "unavailable": "unavailable (files changed; nothing to check them)",
}
