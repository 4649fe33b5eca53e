"""A child ACP agent's wire, in loopd's vocabulary and back. Pure.

loopd's events are modelled on ACP's `session/update`, so most of this is renaming:
the child's updates (as JSON, the SDK models dumped by alias) become loopd events,
which the session layer journals and every editor shows as it shows native turns;
a loopd prompt becomes ACP content blocks. What the child sends that loopd does not
show (its own `available_commands_update`, its mode and option changes, which loopd
re-derives) maps to None.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, cast

from loopd.protocol import events

Wire = Mapping[str, Any]


def event_of(update: Wire) -> events.SessionEvent | None:
    """The loopd event for one child update, or None for what loopd does not relay."""
    match update.get("sessionUpdate"):
        case "agent_message_chunk":
            text = _text(update.get("content"))
            return (
                events.AgentMessageChunk(text, str(update.get("messageId") or "")) if text else None
            )
        case "agent_thought_chunk":
            text = _text(update.get("content"))
            return (
                events.AgentThoughtChunk(text, str(update.get("messageId") or "")) if text else None
            )
        case "tool_call":
            return events.ToolCallStarted(
                tool_call_id=str(update["toolCallId"]),
                title=str(update.get("title") or ""),
                kind=update.get("kind") or "other",
                status=update.get("status") or "pending",
                raw_input=_mapping(update.get("rawInput")),
                locations=_locations(update.get("locations")),
                content=_contents(update.get("content")),
            )
        case "tool_call_update":
            return _tool_call_updated(update)
        case "plan":
            return events.PlanUpdated(tuple(_plan_entry(e) for e in update.get("entries") or ()))
        case "usage_update":
            cost = update.get("cost") or {}
            return events.UsageUpdated(
                int(update.get("used") or 0),
                int(update.get("size") or 0),
                cost.get("amount"),
                cost.get("currency") or "USD",
            )
        case "session_info_update":
            return events.SessionInfoUpdated(update.get("title"), update.get("updatedAt"))
        case _:
            return None


def _tool_call_updated(update: Wire) -> events.ToolCallUpdated:
    content, locations = update.get("content"), update.get("locations")
    output = update.get("rawOutput")
    return events.ToolCallUpdated(
        tool_call_id=str(update["toolCallId"]),
        status=update.get("status"),
        title=update.get("title"),
        kind=update.get("kind"),
        content=None if content is None else _contents(content),
        locations=None if locations is None else _locations(locations),
        raw_input=_mapping(update.get("rawInput")),
        raw_output=output if isinstance(output, Mapping) else _output(output),
    )


def _output(value: Any) -> Mapping[str, Any] | None:
    return None if value is None else {"output": value}


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else None


def _text(block: Any) -> str:
    return str(block.get("text") or "") if isinstance(block, Mapping) else ""


def _locations(raw: Any) -> tuple[events.Location, ...]:
    return tuple(
        events.Location(str(loc["path"]), loc.get("line"))
        for loc in raw or ()
        if isinstance(loc, Mapping) and loc.get("path")
    )


def _contents(raw: Any) -> tuple[events.ToolContent, ...]:
    out: list[events.ToolContent] = []
    for item in raw or ():
        match item.get("type") if isinstance(item, Mapping) else None:
            case "diff":
                out.append(
                    events.DiffContent(str(item["path"]), item.get("oldText"), item["newText"])
                )
            case "terminal":
                out.append(events.TerminalContent(str(item["terminalId"])))
            case "content":
                block = _block(item.get("content"))
                if block is not None:
                    out.append(block)
    return tuple(out)


def _block(raw: Any) -> events.ContentBlock | None:
    if not isinstance(raw, Mapping):
        return None
    match raw.get("type"):
        case "text":
            return events.TextBlock(str(raw.get("text") or ""))
        case "image":
            return events.ImageBlock(str(raw["data"]), str(raw["mimeType"]), raw.get("uri"))
        case "resource_link":
            return events.ResourceLinkBlock(str(raw["uri"]), str(raw.get("name") or raw["uri"]))
        case "resource":
            resource = raw.get("resource") or {}
            if "text" in resource:
                return events.EmbeddedResourceBlock(str(resource["uri"]), str(resource["text"]))
    return None


def _plan_entry(raw: Wire) -> events.PlanEntry:
    return events.PlanEntry(
        str(raw.get("content") or ""),
        raw.get("priority") or "medium",
        raw.get("status") or "pending",
    )


def prompt_blocks(prompt: events.Prompt) -> list[dict[str, Any]]:
    """A loopd prompt as ACP content blocks (JSON, for the SDK to validate)."""
    return [_block_wire(block) for block in prompt.blocks]


def _block_wire(block: events.ContentBlock) -> dict[str, Any]:
    match block:
        case events.TextBlock(text):
            return {"type": "text", "text": text}
        case events.ImageBlock(data, mime_type, uri):
            return {"type": "image", "data": data, "mimeType": mime_type} | (
                {"uri": uri} if uri else {}
            )
        case events.ResourceLinkBlock(uri, name, mime_type):
            return {"type": "resource_link", "uri": uri, "name": name}
        case events.EmbeddedResourceBlock(uri, text, mime_type):
            return {"type": "resource", "resource": {"uri": uri, "text": text}}


def paths_of(tool_call: Wire, cwd: str) -> tuple[str, ...]:
    """The files a child's tool call names (its locations and diffs), absolute."""
    named = [loc.path for loc in _locations(tool_call.get("locations"))]
    named += [
        c.path for c in _contents(tool_call.get("content")) if isinstance(c, events.DiffContent)
    ]
    return tuple(os.path.normpath(os.path.join(cwd, p)) for p in named)


def option_for(options: Sequence[Wire], kind: str) -> str | None:
    """The child's option id of `kind` (allow_once, allow_always, reject_once...)."""
    return next((str(o["optionId"]) for o in options if o.get("kind") == kind), None)


def options_of(raw: Any) -> list[events.ConfigOption]:
    """A child's select options as loopd options (boolean ones are not offered)."""
    out = []
    for o in raw:
        if o.get("type") != "select":
            continue  # loopd offers select options only
        choices = tuple(
            events.ConfigChoice(
                str(c["value"]), str(c.get("name") or c["value"]), c.get("description")
            )
            for c in o.get("options") or ()
            if "value" in c
        )
        out.append(
            events.ConfigOption(
                str(o["id"]), str(o.get("name") or o["id"]), str(o.get("category") or "_other"),
                str(o.get("currentValue") or ""), choices, o.get("description"),
            )
        )  # fmt: skip
    return out
