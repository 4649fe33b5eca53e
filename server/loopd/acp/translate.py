"""Pure translation between ACP schema models and loopd's own vocabulary.

No I/O and no state: everything the agent class does to a message before or after it
talks to the session layer lives here, so it can be table-tested without a
connection. Outgoing updates need no translation of their own: the session layer
already speaks ACP `session/update` JSON (`loopd.protocol.events_wire.to_wire`), which
`update_model` only validates into the SDK's model.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AudioContentBlock,
    AvailableCommandsUpdate,
    BlobResourceContents,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    DeniedOutcome,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    PermissionOption,
    RequestPermissionResponse,
    ResourceContentBlock,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    SessionMode,
    SessionModeState,
    SessionNotification,
    SessionUpdateCompactionSummaryChunk,
    SessionUpdateCompactionUpdate,
    SessionUpdateNotice,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
)
from acp.schema import HttpMcpServer as AcpHttpServer
from acp.schema import McpServerStdio as AcpStdioServer

from loopd.mcp.config import McpServerConfig
from loopd.protocol import events
from loopd.protocol.approvals import ANSWERS, ApprovalDecision, ApprovalRequest
from loopd.protocol.events_wire import to_wire

log = logging.getLogger(__name__)

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
UpdateModel = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AgentPlanContentUpdate
    | AgentPlanRemovedUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
    | SessionUpdateNotice
    | SessionUpdateCompactionUpdate
    | SessionUpdateCompactionSummaryChunk
)
MODE_CATEGORY = "mode"


class UnsupportedContent(ValueError):
    """A prompt block loopd did not advertise (audio)."""


# -- prompts ---------------------------------------------------------------------------


def prompt_of(blocks: Sequence[PromptBlock]) -> events.Prompt:
    """The person's ACP content blocks as a loopd `Prompt`, in order. A binary
    embedded resource becomes an image when it is one, else a link to its URI (no
    provider takes arbitrary blobs). Audio was not advertised and is refused."""
    return events.Prompt(tuple(_block_of(b) for b in blocks))


def _block_of(block: PromptBlock) -> events.ContentBlock:
    match block:
        case TextContentBlock(text=text):
            return events.TextBlock(text)
        case ImageContentBlock(data=data, mime_type=mime, uri=uri):
            return events.ImageBlock(data, mime, uri)
        case ResourceContentBlock(uri=uri, name=name, mime_type=mime):
            return events.ResourceLinkBlock(uri, name, mime)
        case EmbeddedResourceContentBlock(resource=BlobResourceContents() as blob):
            mime = blob.mime_type or ""
            if mime.startswith("image/"):
                return events.ImageBlock(blob.blob, mime, blob.uri)
            return events.ResourceLinkBlock(
                blob.uri, blob.uri.rsplit("/", 1)[-1] or blob.uri, mime or None
            )
        case EmbeddedResourceContentBlock(resource=res):
            return events.EmbeddedResourceBlock(res.uri, res.text, res.mime_type)
        case AudioContentBlock():
            raise UnsupportedContent("audio prompts are not supported (promptCapabilities.audio)")
    raise UnsupportedContent(f"unsupported content block {type(block).__name__}")


# -- config options and legacy modes -----------------------------------------------------


def config_options(
    options: Sequence[events.ConfigOption],
) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
    out: list[SessionConfigOptionSelect | SessionConfigOptionBoolean] = [
        SessionConfigOptionSelect(
            id=o.id,
            name=o.name,
            description=o.description,
            category=o.category,
            type="select",
            current_value=o.current_value,
            options=[
                SessionConfigSelectOption(value=c.value, name=c.name, description=c.description)
                for c in o.choices
            ],
        )
        for o in options
    ]
    return out


def option_in(options: Sequence[events.ConfigOption], category: str) -> events.ConfigOption | None:
    """The option a deprecated API mirrors (`modes` the `mode` category, `models` the
    `model` one): the first of its category."""
    return next((o for o in options if o.category == category), None)


def modes(options: Sequence[events.ConfigOption]) -> SessionModeState | None:
    """Legacy `modes`, derived from the mode config option so the two never drift."""
    if (option := option_in(options, MODE_CATEGORY)) is None:
        return None
    choices = [
        SessionMode(id=c.value, name=c.name, description=c.description) for c in option.choices
    ]
    return SessionModeState(current_mode_id=option.current_value, available_modes=choices)


# -- MCP servers -----------------------------------------------------------------------


def mcp_configs(servers: Sequence[Any] | None) -> tuple[McpServerConfig, ...]:
    """stdio and http servers as loopd configs. SSE (deprecated) and ACP-tunnelled
    servers were not advertised; they are skipped with a warning, not fatal."""
    out: list[McpServerConfig] = []
    for server in servers or ():
        if isinstance(server, AcpStdioServer):
            env = {e.name: e.value for e in server.env}
            out.append(McpServerConfig(server.name, server.command, tuple(server.args), env))
        elif isinstance(server, AcpHttpServer):
            headers = {h.name: h.value for h in server.headers}
            out.append(McpServerConfig(server.name, url=server.url, headers=headers))
        else:
            log.warning("skipping MCP server %r: transport not supported", server.name)
    return tuple(out)


# -- updates and approvals ---------------------------------------------------------------


def update_model(session_id: str, wire: Mapping[str, Any]) -> UpdateModel:
    """Validate one `session/update` `update` JSON object into the SDK's union."""
    note = SessionNotification.model_validate({"sessionId": session_id, "update": dict(wire)})
    return note.update


PERMISSION_OPTIONS = tuple(
    PermissionOption.model_validate({"optionId": d.value, "name": title, "kind": d.value})
    for d, title in ANSWERS
)


def permission_tool_call(request: ApprovalRequest) -> ToolCallUpdate:
    """The tool call a permission dialog shows: the exact command or path in the
    title, the raw input, the preview (a diff for edits) and the locations."""
    wire = to_wire(
        events.ToolCallUpdated(
            request.tool_call_id,
            status="pending",
            title=request.title,
            kind=request.kind,
            content=request.content,
            locations=request.locations,
            raw_input=request.raw_input,
        )
    )
    del wire["sessionUpdate"]
    return ToolCallUpdate.model_validate(wire)


def decision_of(response: RequestPermissionResponse) -> ApprovalDecision:
    """The client's answer as a decision; an option id we never offered is a reject."""
    match response.outcome:
        case AllowedOutcome(option_id=option_id):
            offered = {o.option_id for o in PERMISSION_OPTIONS}
            return ApprovalDecision(option_id) if option_id in offered else _REJECT
        case DeniedOutcome():
            return ApprovalDecision.CANCELLED
    return _REJECT


_REJECT = ApprovalDecision.REJECT_ONCE
