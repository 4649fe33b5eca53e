"""An event's JSON: `to_wire` renders a `SessionEvent` as the exact `update` object of
an ACP `session/update` (camelCase keys, snake_case discriminators).

The ACP adapter forwards that JSON, the LSP adapter sends it inside
`loopd/session/update`, the store journals it and replays it on load, the CLI prints
it. Keeping the wire shape here, once, is what makes "the same session in every
editor" true; `tests/unit/protocol/test_wire_golden.py` pins it against the typed
models of `loopd.protocol.wire`.
"""

from __future__ import annotations

from typing import Any, assert_never

from loopd.protocol import events


def content_to_wire(block: events.ToolContent) -> dict[str, Any]:
    """A content block as ACP JSON (`ContentBlock`, or a `ToolCallContent` item for
    diffs and terminals)."""
    match block:
        case events.TextBlock(text):
            return {"type": "text", "text": text}
        case events.ImageBlock(data, mime_type, uri):
            return _drop_none({"type": "image", "data": data, "mimeType": mime_type, "uri": uri})
        case events.ResourceLinkBlock(uri, name, mime_type):
            return _drop_none(
                {"type": "resource_link", "uri": uri, "name": name, "mimeType": mime_type}
            )
        case events.EmbeddedResourceBlock(uri, text, mime_type):
            return {
                "type": "resource",
                "resource": _drop_none({"uri": uri, "text": text, "mimeType": mime_type}),
            }
        case events.DiffContent(path, old_text, new_text):
            return {"type": "diff", "path": path, "oldText": old_text, "newText": new_text}
        case events.TerminalContent(terminal_id):
            return {"type": "terminal", "terminalId": terminal_id}
        case _:
            assert_never(block)


def _tool_content_to_wire(block: events.ToolContent) -> dict[str, Any]:
    if isinstance(block, events.DiffContent | events.TerminalContent):
        return content_to_wire(block)
    return {"type": "content", "content": content_to_wire(block)}


def _location_to_wire(loc: events.Location) -> dict[str, Any]:
    return _drop_none({"path": loc.path, "line": loc.line})


def config_option_to_wire(opt: events.ConfigOption) -> dict[str, Any]:
    return _drop_none(
        {
            "id": opt.id,
            "name": opt.name,
            "description": opt.description,
            "category": opt.category,
            "type": "select",
            "currentValue": opt.current_value,
            "options": [
                _drop_none({"value": c.value, "name": c.name, "description": c.description})
                for c in opt.choices
            ],
        }
    )


def to_wire(event: events.SessionEvent) -> dict[str, Any]:
    """The ACP `session/update` `update` object for an event."""
    match event:
        case events.AgentMessageChunk(text, message_id, notice):
            chunk = _chunk("agent_message_chunk", events.TextBlock(text), message_id)
            return chunk if notice is None else {**chunk, "_meta": {events.NOTICE_META: notice}}
        case events.AgentThoughtChunk(text, message_id):
            return _chunk("agent_thought_chunk", events.TextBlock(text), message_id)
        case events.UserMessageChunk(content, message_id):
            return _chunk("user_message_chunk", content, message_id)
        case events.ToolCallStarted():
            return _tool_call_started(event)
        case events.ToolCallUpdated():
            return _tool_call_updated(event)
        case events.PlanUpdated(entries):
            return {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": e.content, "priority": e.priority, "status": e.status}
                    for e in entries
                ],
            }
        case events.AvailableCommandsUpdated(commands):
            return {
                "sessionUpdate": "available_commands_update",
                "availableCommands": [
                    _drop_none(
                        {
                            "name": c.name,
                            "description": c.description,
                            "input": {"hint": c.hint} if c.hint else None,
                        }
                    )
                    for c in commands
                ],
            }
        case events.ModeChanged(mode_id):
            return {"sessionUpdate": "current_mode_update", "currentModeId": mode_id}
        case events.ConfigOptionsChanged(options):
            return {
                "sessionUpdate": "config_option_update",
                "configOptions": [config_option_to_wire(o) for o in options],
            }
        case events.SessionInfoUpdated(title, updated_at):
            return _drop_none(
                {"sessionUpdate": "session_info_update", "title": title, "updatedAt": updated_at}
            )
        case events.UsageUpdated(used, size, cost, currency):
            out: dict[str, Any] = {"sessionUpdate": "usage_update", "used": used, "size": size}
            if cost is not None:
                out["cost"] = {"amount": cost, "currency": currency}
            return out
        case events.VerificationUpdated(verification):
            return {
                "sessionUpdate": "session_info_update",
                "_meta": {"loopd": {"verification": verification.to_wire()}},
            }
        case _:
            assert_never(event)


def _chunk(kind: str, content: events.ContentBlock, message_id: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": content_to_wire(content), "messageId": message_id}


def _tool_call_started(ev: events.ToolCallStarted) -> dict[str, Any]:
    out: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": ev.tool_call_id,
        "title": ev.title,
        "kind": ev.kind,
        "status": ev.status,
    }
    if ev.raw_input is not None:
        out["rawInput"] = dict(ev.raw_input)
    if ev.locations:
        out["locations"] = [_location_to_wire(loc) for loc in ev.locations]
    if ev.content:
        out["content"] = [_tool_content_to_wire(c) for c in ev.content]
    return out


def _tool_call_updated(ev: events.ToolCallUpdated) -> dict[str, Any]:
    out: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": ev.tool_call_id}
    if ev.status is not None:
        out["status"] = ev.status
    if ev.title is not None:
        out["title"] = ev.title
    if ev.kind is not None:
        out["kind"] = ev.kind
    if ev.content is not None:
        out["content"] = [_tool_content_to_wire(c) for c in ev.content]
    if ev.locations is not None:
        out["locations"] = [_location_to_wire(loc) for loc in ev.locations]
    if ev.raw_input is not None:
        out["rawInput"] = dict(ev.raw_input)
    if ev.raw_output is not None:
        out["rawOutput"] = dict(ev.raw_output)
    return out


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}
