"""What a native session is built from: its parts (tools and policy, sharing the
session's safety state) and the wiring `loopd.app` fills in. Split from
`loopd.runtimes.native.runtime`, which runs sessions from them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from loopd.engine.done import DoneChecks
from loopd.engine.loop import EngineConfig
from loopd.engine.ports import Clock, Policy, Provider, ToolBox
from loopd.protocol.events import Command, Prompt
from loopd.protocol.turns import UndoReport
from loopd.protocol.wire.shapes import Mention
from loopd.runtimes.base import RuntimeContext


class SessionParts(Protocol):
    """A session's tools and policy, built together because they share its safety
    state (the mode, the sandbox, the network grant)."""

    @property
    def tools(self) -> ToolBox: ...

    @property
    def policy(self) -> Policy: ...

    def set_mode(self, mode: str) -> None:
        """Switch what may run unasked, and how commands are contained."""
        ...

    def remembered(self) -> Mapping[str, Any]:
        """The person's "always" answers, as JSON the store keeps across restarts."""
        ...

    @property
    def containment(self) -> str:
        """How commands are contained, for the person (the sandbox tier in use)."""
        ...

    @property
    def done(self) -> DoneChecks | None:
        """The workspace's definition of done, run in this session's sandbox."""
        ...

    async def begin_turn(self) -> None:
        """A turn starts: what the file tools change from here is undone together.
        What the person must hear about the session's setup (an MCP server that did
        not start) is said here, once, before the turn's own output."""
        ...

    async def undo(self) -> UndoReport:
        """Put back the newest turn's file changes that are still as it left them."""
        ...

    async def changed_files(self) -> list[str]:
        """Reminders for files the agent read that changed since (each told once)."""
        ...

    def writes(self) -> int:
        """How many writes the session's tools have made (file tools, and commands
        that may write), ever increasing: unchanged over a turn, it wrote nothing."""
        ...

    def put_back(self, paths: Sequence[str]) -> None:
        """A restore wrote or removed `paths` between turns: they move the write
        count as the tools' writes do, so a done check made before is stale."""
        ...

    def forget_reads(self) -> None:
        """The model's context went back to an earlier point (a restore): what it had
        read since is unknown to it again, so each file must be read before an edit."""
        ...

    def prompt_commands(self) -> tuple[Command, ...]:
        """Commands that fill in a prompt (the MCP servers' prompts)."""
        ...

    async def expand(self, name: str, text: str) -> Prompt:
        """The prompt command `name` filled in from `text`; raises `LoopdError`."""
        ...

    def mentions(self) -> tuple[Mention, ...]:
        """Context the person may @-mention (the MCP servers' resources)."""
        ...

    async def resolve(self, prompt: Prompt) -> Prompt:
        """`prompt` with its mentions of that context read in (`Mentions`)."""
        ...

    async def aclose(self) -> None: ...


class ModelSource(Protocol):
    """Where a wiring without configured models gets them: the endpoint's list."""

    async def models(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class NativeWiring:
    """How a native session gets its parts; `loopd.app` fills it in."""

    provider_for: Callable[[str], Provider]
    parts_for: Callable[[RuntimeContext, str, Mapping[str, Any]], Awaitable[SessionParts]]
    system_for: Callable[[RuntimeContext, Mapping[str, str]], str]
    chain_for: Callable[[str], dict[str, str]]  # the instruction files now, from disk
    clock: Clock
    default_mode: str
    models: tuple[str, ...]
    default_model: str
    engine: EngineConfig
    open_models: bool = False  # any model id is accepted (local servers serve unlisted ones)
    listing: ModelSource | None = None  # asked as each session opens, when `models` is empty
    resolve_model: Callable[[str], str] = lambda model: model
    """An alias (`sonnet`) to the id the provider is sent; raises `ConfigError` for a
    model the catalog entry does not offer."""
    target_for: Callable[[str, str], str] = lambda model, thought_level: model
    """The id the provider is sent for a model id at a thought level: the catalog's
    per-effort target (`sonnet-high`) where the entry names one, else the id."""
    guides_for: Callable[[str, Sequence[str]], dict[str, str]] = lambda cwd, paths: {}
    """The instruction files of the folders below `cwd` that `paths` lie in, from disk."""

    def with_models(self, models: tuple[str, ...]) -> NativeWiring:
        """This wiring offering `models`, the first as the default. With none the model
        is "": the session then has no model option, and a turn says why."""
        default = models[0] if models else ""
        engine = replace(self.engine, model=default)
        return replace(self, models=models, default_model=default, engine=engine, listing=None)
