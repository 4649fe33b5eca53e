"""The params and results of the `loopd/*` methods (`methods.py` names which is
which): sessions, approvals and questions, mentions, checkpoints. Field names are
snake_case here and camelCase on the wire; an optional field has a default.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from loopd.protocol.wire.updates import (
    AvailableCommand,
    ConfigOption,
    ContentBlock,
    ToolCallFields,
    Verification,
    Wire,
)

PermissionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
HunkDecision = Literal["accept", "reject"]
RestoreScope = Literal["both", "code", "conversation"]


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

    # also the session's own value for one (`loopd.protocol.mentions`): frozen, as the
    # rest of the vocabulary is
    model_config = ConfigDict(frozen=True)

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


# -- review of an edit (`loopd.lsp.review`) --------------------------------------------


class ReviewHunk(Wire):
    """One run of changed lines of a proposed edit; lines are 0-based (`loopd.lsp.hunks`)."""

    index: int
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    old_text: str
    new_text: str


class ReviewProposal(Wire):
    """`loopd/review/propose` (server -> client): an edit waiting for the person's review."""

    review_id: str
    session_id: str
    tool_call_id: str
    path: Annotated[str, Field(description="Canonical (symlinks resolved by the server).")]
    uri: str
    relative_path: str
    old_text: Annotated[
        str | None,
        Field(
            description="null for a new file, or for one loopd may write but not read "
            "(`oldUnread`: a secret, proposed whole)."
        ),
    ]
    old_unread: bool | None = None
    new_text: str
    hunks: list[ReviewHunk]
    always_ask: Annotated[
        bool, Field(description="The server's own verdict: no timer may accept this path.")
    ]


class HunkAnswer(Wire):
    index: int
    decision: HunkDecision


class ReviewAnswer(Wire):
    """The answer: what is not accepted is rejected; `by: 'timer'` accepts no alwaysAsk path."""

    hunks: list[HunkAnswer]
    by: Literal["person", "timer"]


class ReviewSettled(Wire):
    """`loopd/review/settled` (server -> client): the reviewed text was written (or nothing was)."""

    review_id: str
    session_id: str
    path: str
    uri: str
    written: bool
