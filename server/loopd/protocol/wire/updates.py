"""The content and `session/update` shapes of the `loopd/*` extension (ACP's, under
the `loopd/` prefix), and `Wire`, the base of every shape; the methods' own params
and results are in `shapes.py`. Only what loopd sends or reads is typed; `_meta` is
loopd's own room in ACP's objects.

Field names are snake_case here and camelCase on the wire (`Wire` aliases them);
an optional field is one with a default, absent from the JSON when unset.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from loopd.protocol.events import Notice, PlanPriority, PlanStatus, ToolKind, ToolStatus
from loopd.protocol.verification import CriterionState, Seal


class Wire(BaseModel):
    """A JSON object of the extension: camelCase keys, nothing unknown."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# -- content ---------------------------------------------------------------------------


class TextContent(Wire):
    type: Literal["text"]
    text: str


class ResourceLinkContent(Wire):
    type: Literal["resource_link"]
    uri: str
    name: str
    mime_type: str | None = None


class EmbeddedResource(Wire):
    uri: str
    text: str
    mime_type: str | None = None


class EmbeddedResourceContent(Wire):
    type: Literal["resource"]
    resource: EmbeddedResource


class ImageContent(Wire):
    type: Literal["image"]
    data: str
    mime_type: str
    uri: str | None = None


ContentBlock = Annotated[
    TextContent | ResourceLinkContent | EmbeddedResourceContent | ImageContent,
    Field(discriminator="type"),
]


class ToolContentBlock(Wire):
    type: Literal["content"]
    content: ContentBlock


class ToolDiff(Wire):
    type: Literal["diff"]
    path: str
    old_text: str | None  # null: a new file
    new_text: str


class ToolTerminal(Wire):
    type: Literal["terminal"]
    terminal_id: str


ToolContent = Annotated[ToolContentBlock | ToolDiff | ToolTerminal, Field(discriminator="type")]


class Location(Wire):
    path: str
    line: int | None = None


class ToolCallFields(Wire):
    tool_call_id: str
    title: str | None = None
    kind: ToolKind | None = None
    status: ToolStatus | None = None
    content: list[ToolContent] | None = None
    locations: list[Location] | None = None
    raw_input: dict[str, Any] | None = None
    raw_output: dict[str, Any] | None = None


class PlanEntry(Wire):
    content: str
    priority: PlanPriority
    status: PlanStatus


class CommandInput(Wire):
    hint: str


class AvailableCommand(Wire):
    name: str
    description: str
    input: CommandInput | None = None


class ConfigChoice(Wire):
    value: str
    name: str
    description: str | None = None


class ConfigOption(Wire):
    id: str
    name: str
    category: str
    type: Literal["select"]
    current_value: str
    options: list[ConfigChoice]
    description: str | None = None


# -- the verification seal -------------------------------------------------------------


class CriterionOutcome(Wire):
    name: str
    state: CriterionState
    exit_code: int | None


class Watched(Wire):
    files: int
    capped: bool


class Verification(Wire):
    """A turn's verification seal (`_meta.loopd.verification`); `Verification.to_wire`
    sends every field, a client may read only the seal."""

    seal: Seal
    incomplete: bool = False
    unmet: list[str] = []
    criteria: list[CriterionOutcome] = []
    protected_writes: list[str] = []
    protected_watched: Watched | None = None
    cycles: int = 0
    summary: str | None = None


# -- session/update --------------------------------------------------------------------


class LoopdMeta(Wire):
    sandbox_tier: str | None = None
    verification: Verification | None = None
    interrupted: Annotated[
        bool | None,
        Field(
            description="On the note a loaded session starts with when its last turn was "
            "cut off by a crash: the client may offer loopd/session/continue as a button."
        ),
    ] = None


class UpdateMeta(Wire):
    """loopd's additions to an update: `loopd`, and `loopd/notice` on words loopd
    adds itself to the agent's message (an error, a retry, a note)."""

    loopd: LoopdMeta | None = None
    notice: Annotated[Notice | None, Field(alias="loopd/notice")] = None


class _Update(Wire):
    meta: Annotated[UpdateMeta | None, Field(alias="_meta")] = None


class _Chunk(_Update):
    content: ContentBlock
    message_id: str | None = None


class UserMessageChunk(_Chunk):
    session_update: Literal["user_message_chunk"]


class AgentMessageChunk(_Chunk):
    session_update: Literal["agent_message_chunk"]


class AgentThoughtChunk(_Chunk):
    session_update: Literal["agent_thought_chunk"]


class ToolCallStart(_Update, ToolCallFields):
    session_update: Literal["tool_call"]


class ToolCallProgress(_Update, ToolCallFields):
    session_update: Literal["tool_call_update"]


class PlanUpdate(_Update):
    session_update: Literal["plan"]
    entries: list[PlanEntry]


class AvailableCommandsUpdate(_Update):
    session_update: Literal["available_commands_update"]
    available_commands: list[AvailableCommand]


class CurrentModeUpdate(_Update):
    session_update: Literal["current_mode_update"]
    current_mode_id: str


class ConfigOptionUpdate(_Update):
    session_update: Literal["config_option_update"]
    config_options: list[ConfigOption]


class SessionInfoUpdate(_Update):
    session_update: Literal["session_info_update"]
    title: str | None = None
    updated_at: str | None = None


class Cost(Wire):
    amount: float
    currency: str


class UsageUpdate(_Update):
    session_update: Literal["usage_update"]
    used: int
    size: int
    cost: Cost | None = None


SessionUpdate = Annotated[
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | PlanUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate,
    Field(discriminator="session_update"),
]


class SessionNotification(Wire):
    session_id: str
    update: SessionUpdate
