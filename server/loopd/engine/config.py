"""What an `Engine` is built from: its settings and the ports it talks to, and the
parts of a step built from both (`streamer_of`, `tool_phase_of`).

Both are plain values the owner (the native runtime, a delegate, the test harness)
assembles and may swap between steps with `Engine.reconfigure`: settings are frozen
so a running step never sees half a change; the ports are the engine's only way to
the outside (provider, tools, screen, store, clock), which keeps `loopd.engine` pure.
The optional ports are features a workspace may lack (done criteria, steering,
mentions): None means the turn skips them, not that it fails.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from loopd.context.compaction import CompactionPolicy
from loopd.engine.compactor import MemoryWindows, NoContextJournal
from loopd.engine.done import DoneChecks
from loopd.engine.guard import LoopGuard
from loopd.engine.history import random_id
from loopd.engine.limits import Limits
from loopd.engine.ports import (
    Approver,
    Clock,
    ContextJournal,
    Emitter,
    Guides,
    Journal,
    Mentions,
    Policy,
    Provider,
    ToolBox,
    WindowBook,
)
from loopd.engine.steer import SteerBox
from loopd.engine.streaming import ReplyStreamer, RetryPolicy
from loopd.engine.toolrun import ToolPhase
from loopd.protocol.model import ThinkingLevel


@dataclass(frozen=True, slots=True)
class EngineConfig:
    model: str
    system: str = ""
    limits: Limits = field(default_factory=Limits)
    thinking: ThinkingLevel = "off"
    max_tokens: int = 8192
    context_window: int = 200_000  # for a model whose window nothing has told
    windows: Mapping[str, int] = field(default_factory=dict)  # configured, per model
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    show_reasoning: bool = True
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)


@dataclass(slots=True)
class EnginePorts:
    provider: Provider
    tools: ToolBox
    emitter: Emitter
    approver: Approver
    policy: Policy
    journal: Journal
    clock: Clock
    new_id: Callable[[str], str] = random_id
    jitter: Callable[[], float] = random.random
    windows: WindowBook = field(default_factory=MemoryWindows)
    context: ContextJournal = field(default_factory=NoContextJournal)
    done: DoneChecks | None = None  # the workspace's definition of done, if any
    steer: SteerBox | None = None  # what the person says while a turn runs
    mentions: Mentions | None = None  # mentioned context read in at a turn's start
    guides: Guides | None = None  # instructions of the folders a turn works in


def streamer_of(
    config: EngineConfig, ports: EnginePorts, emitter: Emitter | None = None
) -> ReplyStreamer:
    """A step's model call, shown on `emitter` (the session's screen by default)."""
    p = ports
    return ReplyStreamer(
        p.provider,
        emitter or p.emitter,
        p.clock,
        p.new_id,
        p.jitter,
        config.retry,
        config.show_reasoning,
    )


def tool_phase_of(
    session_id: str, config: EngineConfig, ports: EnginePorts, guard: LoopGuard
) -> ToolPhase:
    """A step's tool round, under the turn's loop `guard`."""
    p = ports
    return ToolPhase(
        session_id, p.tools, p.policy, p.approver, p.emitter, p.journal, config.limits, guard
    )
