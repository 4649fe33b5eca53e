"""The ACP-shaped JSON of the `loopd/` LSP extension, in one place and free of I/O.

Requests carry ACP's params and results (camelCase) under the `loopd/` prefix, so a
client that speaks ACP to `loopd acp` speaks the same dialect here. The converter
keeps the params of methods lsprotocol does not know as plain dicts (pygls would
turn them into namedtuples), which is what these functions read.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from cattrs import Converter
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)

from loopd.mcp.config import McpServerConfig
from loopd.protocol import events
from loopd.protocol.approvals import ANSWERS, ApprovalDecision, ApprovalRequest
from loopd.protocol.events_wire import config_option_to_wire, to_wire
from loopd.sessions.manager import SessionView
from loopd.store.sqlite import SessionPage


class BadParams(ValueError):
    """The client sent params this method cannot use (answered as -32602)."""


@functools.cache
def raw_converter() -> Converter:
    """pygls's converter, except that untyped params and results stay dicts. One per
    process, shared by every connection's server: cattrs builds each type's hooks
    on first use, ~25 ms of a fresh converter's first `initialize` that a daemon's
    later connections would pay again. Nothing registers hooks after this."""
    converter: Converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, c: c(**obj))
    return converter


def field(params: Any, name: str, kind: type | tuple[type, ...] = str, default: Any = ...) -> Any:
    """`params[name]` checked against `kind`; a missing or mistyped field is BadParams."""
    if not isinstance(params, Mapping):
        raise BadParams("params must be an object")
    if name not in params or params[name] is None:
        if default is ...:
            raise BadParams(f"missing field {name!r}")
        return default
    value = params[name]
    if not isinstance(value, kind):
        raise BadParams(f"field {name!r} has the wrong type")
    return value


def prompt_from_wire(blocks: Any) -> events.Prompt:
    """An ACP prompt (a list of content blocks) as our `Prompt`."""
    if not isinstance(blocks, list) or not blocks:
        raise BadParams("prompt must be a non-empty list of content blocks")
    return events.Prompt(tuple(_block(b) for b in blocks))


def _block(block: Any) -> events.ContentBlock:
    kind = field(block, "type")
    if kind == "text":
        return events.TextBlock(field(block, "text"))
    if kind == "resource_link":
        return events.ResourceLinkBlock(
            field(block, "uri"), field(block, "name"), block.get("mimeType")
        )
    if kind == "resource":
        res = field(block, "resource", Mapping)
        return events.EmbeddedResourceBlock(
            field(res, "uri"), field(res, "text"), res.get("mimeType")
        )
    if kind == "image":
        return events.ImageBlock(field(block, "data"), field(block, "mimeType"), block.get("uri"))
    raise BadParams(f"unsupported content block type {kind!r}")


def mcp_servers_from_wire(servers: Any) -> tuple[McpServerConfig, ...]:
    if not isinstance(servers, list):
        return ()
    return tuple(_mcp_server(s) for s in servers)


def _mcp_server(spec: Any) -> McpServerConfig:
    name = field(spec, "name")
    pairs: dict[str, dict[str, str]] = {"env": {}, "headers": {}}
    for key in pairs:
        pairs[key] = {field(p, "name"): field(p, "value") for p in spec.get(key) or ()}
    if "url" in spec:
        return McpServerConfig(name, url=field(spec, "url"), headers=pairs["headers"])
    args = tuple(str(a) for a in spec.get("args") or ())
    return McpServerConfig(name, command=field(spec, "command"), args=args, env=pairs["env"])


def view_to_wire(view: SessionView) -> dict[str, Any]:
    """The result of `loopd/session/new` (ACP NewSessionResponse)."""
    return {"sessionId": view.id, **opened_to_wire(view)}


def opened_to_wire(view: SessionView) -> dict[str, Any]:
    """What a client learns when a session opens: its config options, and under
    `_meta.loopd.availableCommands` its slash commands (ACP sends those as an update
    after the answer; here they come with it, so no update can precede the answer)."""
    commands = to_wire(events.AvailableCommandsUpdated(view.commands))["availableCommands"]
    return {
        "configOptions": config_options_to_wire(view),
        "_meta": {"loopd": {"availableCommands": commands}},
    }


def config_options_to_wire(view: SessionView) -> list[dict[str, Any]]:
    return [config_option_to_wire(o) for o in view.config_options]


def page_to_wire(page: SessionPage) -> dict[str, Any]:
    """The result of `loopd/session/list` (ACP ListSessionsResponse)."""
    sessions = []
    for record in page.sessions:
        info: dict[str, Any] = {"sessionId": record.id, "cwd": record.cwd}
        if record.title:
            info["title"] = record.title
        if record.updated_at:
            info["updatedAt"] = record.updated_at
        sessions.append(info)
    out: dict[str, Any] = {"sessions": sessions}
    if page.next_cursor:
        out["nextCursor"] = page.next_cursor
    return out


def permission_params(request: ApprovalRequest) -> dict[str, Any]:
    """Exactly ACP `session/request_permission` params for an approval."""
    update = events.ToolCallUpdated(
        request.tool_call_id,
        status="pending",
        title=request.title,
        kind=request.kind,
        content=request.content or None,
        locations=request.locations or None,
        raw_input=request.raw_input,
    )
    tool_call = to_wire(update)
    del tool_call["sessionUpdate"]
    options = [{"optionId": d.value, "name": name, "kind": d.value} for d, name in ANSWERS]
    return {"sessionId": request.session_id, "toolCall": tool_call, "options": options}


def decision_from_outcome(result: Any) -> ApprovalDecision:
    """An ACP RequestPermissionResponse as a decision; anything unexpected rejects."""
    outcome = result.get("outcome") if isinstance(result, Mapping) else None
    if not isinstance(outcome, Mapping):
        return ApprovalDecision.REJECT_ONCE
    if outcome.get("outcome") == "cancelled":
        return ApprovalDecision.CANCELLED
    return decision_named(outcome.get("optionId"))


def decision_named(name: Any) -> ApprovalDecision:
    """An option id or a dialog title as a decision; unknown names reject."""
    for decision, title in ANSWERS:
        if name in (decision.value, title):
            return decision
    return ApprovalDecision.REJECT_ONCE


def option_titles() -> Sequence[str]:
    return [title for _, title in ANSWERS]
