"""The shapes of the `loopd/*` extension: ACP's session params and results under the
`loopd/` prefix, and loopd's own requests. Only what loopd sends or reads is typed;
`_meta` is loopd's own room in ACP's objects.

Field names are snake_case here and camelCase on the wire (`Wire` aliases them);
an optional field is one with a default, absent from the JSON when unset.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from loopd.protocol.events import Notice, PlanPriority, PlanStatus, ToolKind, ToolStatus
from loopd.protocol.verification import CriterionState, Seal

PermissionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
RestoreScope = Literal["both", "code", "conversation"]


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


# -- approvals and questions -----------------------------------------------------------


class PermissionOption(Wire):
    option_id: str
    name: str
    kind: PermissionKind


class PermissionParams(Wire):
    session_id: str
    tool_call: ToolCallFields
    options: list[PermissionOption]


class SelectedOutcome(Wire):
    outcome: Literal["selected"]
    option_id: str


class CancelledOutcome(Wire):
    outcome: Literal["cancelled"]


class PermissionOutcome(Wire):
    outcome: Annotated[SelectedOutcome | CancelledOutcome, Field(discriminator="outcome")]


class AskUserParams(Wire):
    session_id: str
    tool_call_id: str
    question: str
    choices: list[str]
    allow_text: bool


class AskUserResult(Wire):
    answer: str


# -- mentions --------------------------------------------------------------------------


class Mention(Wire):
    """Context the session offers to @-mention (an MCP server's resource); a prompt
    links it by `uri`."""

    server: str
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


class MentionsResult(Wire):
    mentions: list[Mention]


# -- sessions --------------------------------------------------------------------------


class EnvVariable(Wire):
    name: str
    value: str


class HttpHeader(Wire):
    name: str
    value: str


class StdioMcpServer(Wire):
    """An MCP server as ACP's `session/new` takes it: a command (stdio)..."""

    name: str
    command: str
    args: list[str]
    env: list[EnvVariable]


class HttpMcpServer(Wire):
    """...or a URL (HTTP)."""

    type: Literal["http"]
    name: str
    url: str
    headers: list[HttpHeader]


McpServer = StdioMcpServer | HttpMcpServer


class NewSessionParams(Wire):
    cwd: str
    additional_directories: list[str] | None = None
    mcp_servers: list[McpServer] | None = None


class LoadSessionParams(Wire):
    session_id: str
    mcp_servers: list[McpServer] | None = None


class OpenedLoopdMeta(Wire):
    available_commands: list[AvailableCommand]


class OpenedMeta(Wire):
    """A session's slash commands come with the answer that opens it."""

    loopd: OpenedLoopdMeta


class LoadSessionResult(Wire):
    config_options: list[ConfigOption]
    meta: Annotated[OpenedMeta | None, Field(alias="_meta")] = None


class NewSessionResult(LoadSessionResult):
    session_id: str


class ForkSessionParams(Wire):
    """A new session from `sessionId`'s history (ACP's `session/fork`); with
    `beforePrompt` N its conversation is the one before prompt N."""

    session_id: str
    cwd: str
    before_prompt: int | None = None
    additional_directories: list[str] | None = None
    mcp_servers: list[McpServer] | None = None


class ListSessionsParams(Wire):
    cwd: str | None = None
    cursor: str | None = None


class SessionInfo(Wire):
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str | None = None


class ListResult(Wire):
    sessions: list[SessionInfo]
    next_cursor: str | None = None


class SessionRef(Wire):
    """The params of a method that names only its session."""

    session_id: str


class PromptParams(Wire):
    session_id: str
    prompt: list[ContentBlock]


class PromptLoopdMeta(Wire):
    turn_id: str | None = None
    verification: Verification | None = None


class PromptMeta(Wire):
    loopd: PromptLoopdMeta | None = None


class PromptResult(Wire):
    stop_reason: str
    meta: Annotated[PromptMeta | None, Field(alias="_meta")] = None


class SetConfigOptionParams(Wire):
    session_id: str
    config_id: str
    value: str


class SetConfigOptionResult(Wire):
    config_options: list[ConfigOption]


class SteerParams(Wire):
    session_id: str
    text: str


class Empty(Wire):
    """The result of a method that answers nothing but success."""


# -- checkpoints (`loopd.sessions.rewind_wire`) ----------------------------------------


class Checkpoint(Wire):
    """A checkpoint of the session: the workspace and the conversation before prompt
    `prompt`."""

    prompt: int
    label: Annotated[str, Field(description="The prompt's first line (as the title is made).")]
    created_at: str
    conversation: Annotated[
        bool,
        Field(description="Whether the conversation can be restored too (its context is loopd's)."),
    ]
    left_out: Annotated[
        list[str],
        Field(description="Files the checkpoint could not hold (too large, or the store full)."),
    ]


class CheckpointsResult(Wire):
    checkpoints: list[Checkpoint]
    redo: Annotated[bool, Field(description="Whether the last restore can be redone.")]


class RestoreParams(Wire):
    session_id: str
    prompt: int | None = None
    redo: bool | None = None
    scope: RestoreScope | None = None
    force: bool | None = None


class FailedPath(Wire):
    path: str
    reason: str


class Restored(Wire):
    restored: Literal[True]
    summary: str
    written: list[str]
    removed: list[str]
    failed: list[FailedPath]


class RestoreRefused(Wire):
    """Files changed outside the agent since: nothing was changed; send `force`."""

    restored: Literal[False]
    changed_outside: list[str]
    summary: str


RestoreResult = Restored | RestoreRefused
