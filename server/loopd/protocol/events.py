"""The one event vocabulary every runtime emits, modelled on ACP `session/update`.

Each event is a small frozen value, and so is the content it carries (text, images,
resources, diffs, terminals, locations, plans, commands, config options) and the
person's `Prompt`. Their JSON is rendered in one place, `loopd.protocol.events_wire`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from loopd.protocol.verification import Verification

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
PlanPriority = Literal["high", "medium", "low"]
PlanStatus = Literal["pending", "in_progress", "completed"]


# -- content shown in prompts and tool calls -------------------------------------------


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str


@dataclass(frozen=True, slots=True)
class ImageBlock:
    data: str  # base64
    mime_type: str
    uri: str | None = None


@dataclass(frozen=True, slots=True)
class ResourceLinkBlock:
    uri: str
    name: str
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class EmbeddedResourceBlock:
    """An embedded text resource (an @-mention of a file or a selection)."""

    uri: str
    text: str
    mime_type: str | None = None


ContentBlock = TextBlock | ImageBlock | ResourceLinkBlock | EmbeddedResourceBlock


@dataclass(frozen=True, slots=True)
class DiffContent:
    path: str
    old_text: str | None  # None: a new file
    new_text: str


@dataclass(frozen=True, slots=True)
class TerminalContent:
    terminal_id: str


ToolContent = ContentBlock | DiffContent | TerminalContent


@dataclass(frozen=True, slots=True)
class Location:
    path: str
    line: int | None = None  # 1-based


@dataclass(frozen=True, slots=True)
class PlanEntry:
    content: str
    priority: PlanPriority = "medium"
    status: PlanStatus = "pending"


@dataclass(frozen=True, slots=True)
class Command:
    name: str  # no leading slash
    description: str
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class ConfigChoice:
    value: str
    name: str
    description: str | None = None


@dataclass(frozen=True, slots=True)
class ConfigOption:
    """A `select` config option (ACP categories: mode, model, thought_level, or
    `_`-prefixed custom ones)."""

    id: str
    name: str
    category: str
    current_value: str
    choices: tuple[ConfigChoice, ...]
    description: str | None = None


# -- events ----------------------------------------------------------------------------


Notice = Literal["error", "retry", "note"]
NOTICE_META = "loopd/notice"


@dataclass(frozen=True, slots=True)
class AgentMessageChunk:
    """Text in the agent's voice. `notice` marks words loopd adds itself (a failed
    turn, an interrupted reply being requested again, a limit reached), so a
    frontend that separates the answer from diagnostics (`loopd run`: stdout vs
    stderr) can; on the wire it travels as `_meta["loopd/notice"]`."""

    text: str
    message_id: str
    notice: Notice | None = None


@dataclass(frozen=True, slots=True)
class AgentThoughtChunk:
    text: str
    message_id: str


@dataclass(frozen=True, slots=True)
class UserMessageChunk:
    content: ContentBlock
    message_id: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    tool_call_id: str
    title: str
    kind: ToolKind = "other"
    status: ToolStatus = "pending"
    raw_input: Mapping[str, Any] | None = None
    locations: tuple[Location, ...] = ()
    content: tuple[ToolContent, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCallUpdated:
    """Only the fields that changed; `None` leaves the client's copy as it was."""

    tool_call_id: str
    status: ToolStatus | None = None
    title: str | None = None
    kind: ToolKind | None = None
    content: tuple[ToolContent, ...] | None = None
    locations: tuple[Location, ...] | None = None
    raw_input: Mapping[str, Any] | None = None
    raw_output: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True, slots=True)
class AvailableCommandsUpdated:
    commands: tuple[Command, ...]


@dataclass(frozen=True, slots=True)
class ModeChanged:
    mode_id: str


@dataclass(frozen=True, slots=True)
class ConfigOptionsChanged:
    options: tuple[ConfigOption, ...]


@dataclass(frozen=True, slots=True)
class SessionInfoUpdated:
    title: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True, slots=True)
class UsageUpdated:
    used: int
    size: int
    cost: float | None = None
    currency: str = "USD"


@dataclass(frozen=True, slots=True)
class VerificationUpdated:
    """A turn's seal. On the wire a `session_info_update` carrying it in
    `_meta.loopd.verification`, so every client may ignore it and a statusline may
    show it (and a replayed session shows its last seal)."""

    verification: Verification


SessionEvent = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStarted
    | ToolCallUpdated
    | PlanUpdated
    | AvailableCommandsUpdated
    | ModeChanged
    | ConfigOptionsChanged
    | SessionInfoUpdated
    | UsageUpdated
    | VerificationUpdated
)


@dataclass(frozen=True, slots=True)
class Prompt:
    """What the person sent: content blocks in order."""

    blocks: tuple[ContentBlock, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if isinstance(b, TextBlock))


@dataclass(frozen=True, slots=True)
class FilledPrompt(Prompt):
    """A prompt an MCP server filled in (a prompt command): its embedded resources are
    that server's own content, not files the person attached from the editor."""
