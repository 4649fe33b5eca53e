"""The runtime contract: who runs a session's turns.

Native engine, Claude Code, Codex, any ACP agent: all are interchangeable behind this
contract. A runtime is opened for one session with that session's emitter and
approver; it emits the one event vocabulary (`loopd.protocol.events`) and asks every
approval through the `Approver`. `state` is the runtime's own resume token (a CLI's
session id, say), stored by the session layer and handed back on load.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from loopd.config.trust.pins import Pins, moved
from loopd.engine.ports import Approver, Emitter
from loopd.mcp.config import McpServerConfig
from loopd.protocol.errors import RuntimeFailure
from loopd.protocol.events import ConfigOption, Prompt
from loopd.protocol.questions import UserQuestions
from loopd.protocol.turns import Outcome
from loopd.tools.access import EditorTerminals, FileAccess


def refuse_moved(pins: Pins) -> None:
    """Raise `RuntimeFailure` when a file the trusted workspace config runs is no
    longer what was trusted: it runs outside the sandbox, and a command may have
    rewritten it since."""
    changed = moved(pins)
    if changed:
        raise RuntimeFailure(
            f"{', '.join(changed)} changed since the folder was trusted, and the runtime "
            "runs it outside the sandbox: review it, then trust the folder again"
        )


@dataclass(frozen=True, slots=True)
class RuntimeContext:
    session_id: str
    cwd: str
    additional_roots: tuple[str, ...]
    emitter: Emitter
    approver: Approver
    config: Mapping[str, str]  # config option id -> value (mode, model, thought_level, ...)
    mcp_servers: tuple[McpServerConfig, ...] = ()
    state: Mapping[str, Any] = field(default_factory=dict)
    editor_files: Callable[[FileAccess], FileAccess] = field(default=lambda local: local)
    """Given the local file access, the one to use right now: the prompting editor's
    (its unsaved buffers, its review UI) when it offers one."""
    editor_terminals: Callable[[], EditorTerminals | None] = field(default=lambda: None)
    """The prompting editor's terminals right now, or None when it has none."""
    person: Callable[[], UserQuestions | None] = field(default=lambda: None)
    """Who can answer a question right now (the prompting editor or terminal)."""

    @property
    def roots(self) -> tuple[str, ...]:
        return (self.cwd, *self.additional_roots)


class Runtime(Protocol):
    async def prompt(self, prompt: Prompt) -> Outcome:
        """Run one turn to its end. Cancellation arrives through `cancel`; a failure
        becomes a stop reason plus a visible message, never an exception."""
        ...

    async def cancel(self) -> None: ...

    async def set_config(self, option_id: str, value: str) -> None: ...

    def config_options(self) -> tuple[ConfigOption, ...]: ...

    def state(self) -> Mapping[str, Any]:
        """What the session layer stores to resume this runtime after a restart."""
        ...

    async def close(self) -> None: ...


class RuntimeFactory(Protocol):
    name: str

    async def open(self, context: RuntimeContext) -> Runtime: ...


S = TypeVar("S")
R = TypeVar("R", bound=Runtime)


class SettingsFactory(Generic[S, R]):
    """A factory whose every runtime is `runtime(settings, context)`: what a CLI's
    factory is (`ClaudeRuntimeFactory`, `CodexRuntimeFactory`), named for its harness."""

    def __init__(self, name: str, runtime: Callable[[S, RuntimeContext], R], settings: S) -> None:
        self.name = name
        self.settings = settings
        self._runtime = runtime

    async def open(self, context: RuntimeContext) -> R:
        return self._runtime(self.settings, context)


@runtime_checkable
class ForkableFactory(Protocol):
    """A runtime whose whole history is loopd's store (the session's journal and
    model context), so a copy of that store is a fork that continues on its own.
    A foreign CLI keeps its own history and is not one."""

    history_in_store: Literal[True]
