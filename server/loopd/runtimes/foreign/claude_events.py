"""Claude Code's stream-json messages, translated into loopd's event vocabulary.

Pure: no I/O, no clock. `ClaudeTranslator` is fed each stdout object in order and
returns the events to emit; the helper functions build what goes back on stdin
(user messages, permission answers). The shapes are the ones recorded from the real
CLI (research/foreign.md §1.2-1.5; fixtures under tests/unit/runtimes/fixtures).

Why the translator keeps state: text and thinking arrive twice, once as
`stream_event` deltas and once in the finished `assistant` message. Deltas are shown
live; the finished copy is shown only for messages that never streamed (the CLI's
synthetic "API Error" message). A tool call is announced when its block starts
(input still empty) and refined when the full input arrives; its result is matched
back by tool_use_id. TodoWrite is the plan, not a tool card.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from loopd.protocol.events import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentBlock,
    EmbeddedResourceBlock,
    ImageBlock,
    PlanEntry,
    PlanStatus,
    PlanUpdated,
    Prompt,
    ResourceLinkBlock,
    SessionEvent,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    ToolKind,
    UsageUpdated,
)
from loopd.protocol.model import Usage
from loopd.protocol.turns import StopReason
from loopd.runtimes.foreign.claude_tools import mcp_title, tool_view

# loopd mode -> Claude Code permission mode. full_auto is not `bypassPermissions`
# (refused as root, and it would run everything): the CLI stays in acceptEdits, and
# every question it would put is refused unasked (`claude_tools.refused_unasked`).
PERMISSION_MODES: Final = {
    "plan": "plan",
    "ask": "default",
    "accept_edits": "acceptEdits",
    "full_auto": "acceptEdits",
}
_LOOPD_MODES: Final = {"plan": "plan", "default": "ask", "acceptEdits": "accept_edits"}

_DEFAULT_CONTEXT_WINDOW: Final = 200_000


def loopd_mode(permission_mode: str) -> str | None:
    """The loopd mode a CLI permission mode corresponds to, if any."""
    return _LOOPD_MODES.get(permission_mode)


# -- stdout -> events -------------------------------------------------------------------


class ClaudeTranslator:
    """Feeds on stdout objects in order; returns the events each one produces."""

    def __init__(self, cwd: str) -> None:
        self._cwd = cwd
        self.session_id: str | None = None
        self.permission_mode: str | None = None
        self._message_id = ""
        self._streamed: set[str] = set()
        self._tools: dict[str, ToolKind] = {}
        self._todos: dict[str, tuple[PlanEntry, ...]] = {}
        self._context_tokens = 0
        self._output_tokens = 0

    def translate(self, message: Mapping[str, Any]) -> list[SessionEvent]:
        if message.get("session_id"):
            self.session_id = str(message["session_id"])
        subagent = message.get("parent_tool_use_id") is not None
        match message.get("type"):
            case "system":
                if message.get("permissionMode"):
                    self.permission_mode = str(message["permissionMode"])
                return []
            case "stream_event" if not subagent:
                return self._stream_event(message.get("event") or {})
            case "assistant":
                return self._assistant(message.get("message") or {}, subagent)
            case "user":
                return self._tool_results(message)
            case "result":
                return [self._usage(message)]
            case _:
                return []

    def _stream_event(self, event: Mapping[str, Any]) -> list[SessionEvent]:
        match event.get("type"):
            case "message_start":
                msg = event.get("message") or {}
                self._message_id = str(msg.get("id", ""))
                usage = msg.get("usage") or {}
                self._context_tokens = _prompt_tokens(usage)
                self._output_tokens = int(usage.get("output_tokens") or 0)
            case "message_delta":
                usage = event.get("usage") or {}
                self._output_tokens = int(usage.get("output_tokens") or self._output_tokens)
            case "content_block_start":
                block = event.get("content_block") or {}
                if block.get("type") == "tool_use":
                    return self._tool_started(block)
            case "content_block_delta":
                return self._delta(event.get("delta") or {})
        return []

    def _delta(self, delta: Mapping[str, Any]) -> list[SessionEvent]:
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            self._streamed.add(self._message_id)
            return [AgentMessageChunk(str(delta["text"]), self._message_id)]
        if kind == "thinking_delta" and delta.get("thinking"):
            self._streamed.add(self._message_id)
            return [AgentThoughtChunk(str(delta["thinking"]), self._message_id)]
        return []

    def _tool_started(self, block: Mapping[str, Any]) -> list[SessionEvent]:
        tool_id, name = str(block.get("id", "")), str(block.get("name", ""))
        if name == "TodoWrite" or tool_id in self._tools:
            return []
        kind = tool_view(name, {}, self._cwd).kind
        self._tools[tool_id] = kind
        return [ToolCallStarted(tool_id, mcp_title(name), kind, "pending")]

    def _assistant(self, msg: Mapping[str, Any], subagent: bool) -> list[SessionEvent]:
        message_id = str(msg.get("id", ""))
        fresh = not subagent and message_id not in self._streamed
        events: list[SessionEvent] = []
        for block in msg.get("content") or ():
            kind = block.get("type")
            if kind == "text" and fresh and block.get("text"):
                events.append(AgentMessageChunk(str(block["text"]), message_id))
            elif kind == "thinking" and fresh and block.get("thinking"):
                events.append(AgentThoughtChunk(str(block["thinking"]), message_id))
            elif kind == "tool_use":
                events.extend(self._tool_input(block))
        return events

    def _tool_input(self, block: Mapping[str, Any]) -> list[SessionEvent]:
        tool_id, name = str(block.get("id", "")), str(block.get("name", ""))
        tool_input = dict(block.get("input") or {})
        if name == "TodoWrite":
            self._todos[tool_id] = plan_entries(tool_input)
            return []
        view = tool_view(name, tool_input, self._cwd)
        known = tool_id in self._tools
        self._tools[tool_id] = view.kind
        if not known:
            return [
                ToolCallStarted(
                    tool_id,
                    view.title,
                    view.kind,
                    "pending",
                    tool_input,
                    view.locations,
                    view.content,
                )
            ]
        return [
            ToolCallUpdated(
                tool_id,
                title=view.title,
                kind=view.kind,
                raw_input=tool_input,
                locations=view.locations,
                content=view.content,
            )
        ]

    def _tool_results(self, message: Mapping[str, Any]) -> list[SessionEvent]:
        content = (message.get("message") or {}).get("content")
        if not isinstance(content, list):
            return []
        events: list[SessionEvent] = []
        extra = message.get("tool_use_result")
        for block in content:
            if block.get("type") != "tool_result":
                continue
            tool_id, failed = str(block.get("tool_use_id", "")), bool(block.get("is_error"))
            if tool_id in self._todos:
                entries = self._todos.pop(tool_id)
                if not failed:
                    events.append(PlanUpdated(entries))
            elif tool_id in self._tools:
                events.append(self._tool_finished(tool_id, block, failed, extra))
        return events

    def _tool_finished(
        self, tool_id: str, block: Mapping[str, Any], failed: bool, extra: Any
    ) -> ToolCallUpdated:
        text = result_text(block.get("content"))
        raw: dict[str, Any] = {"output": text}
        if isinstance(extra, dict):
            raw.update(extra)
        keep_preview = self._tools[tool_id] == "edit" and not failed
        shown = None if keep_preview or not text else (TextBlock(text),)
        return ToolCallUpdated(
            tool_id, status="failed" if failed else "completed", content=shown, raw_output=raw
        )

    def _usage(self, result: Mapping[str, Any]) -> UsageUpdated:
        windows = [
            int(m.get("contextWindow") or 0) for m in (result.get("modelUsage") or {}).values()
        ]
        cost = result.get("total_cost_usd")
        return UsageUpdated(
            used=self._context_tokens + self._output_tokens,
            size=max(windows, default=0) or _DEFAULT_CONTEXT_WINDOW,
            cost=float(cost) if isinstance(cost, int | float) else None,
        )

    @property
    def context_tokens(self) -> int:
        return self._context_tokens


def plan_entries(todo_input: Mapping[str, Any]) -> tuple[PlanEntry, ...]:
    statuses: dict[str, PlanStatus] = {
        "pending": "pending",
        "in_progress": "in_progress",
        "completed": "completed",
    }
    return tuple(
        PlanEntry(str(t.get("content", "")), "medium", statuses.get(t.get("status"), "pending"))
        for t in todo_input.get("todos") or ()
    )


def result_text(content: Any) -> str:
    """A tool_result's content (a string or a list of blocks) as plain text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
    return ""


def _prompt_tokens(usage: Mapping[str, Any]) -> int:
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(int(usage.get(k) or 0) for k in keys)


# -- turn end ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """How a `result` line ends the turn. `error` is set when something failed; `show`
    says whether the person has not already seen it (an API error arrives as a
    synthetic assistant message, which the translator shows)."""

    stop_reason: StopReason
    usage: Usage
    error: str | None = None
    show: bool = False


def turn_end(result: Mapping[str, Any], *, cancelled: bool) -> TurnEnd:
    raw = result.get("usage") or {}
    usage = Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0),
    )
    subtype = result.get("subtype")
    if cancelled:
        return TurnEnd("cancelled", usage)
    if subtype in ("error_max_turns", "error_max_budget_usd"):
        return TurnEnd("max_turn_requests", usage)
    if subtype != "success":
        errors = "; ".join(str(e) for e in result.get("errors") or ()) or str(subtype)
        return TurnEnd("end_turn", usage, f"Claude Code: {errors}", show=True)
    if result.get("is_error"):
        return TurnEnd("end_turn", usage, str(result.get("result") or "Claude Code failed"))
    match result.get("stop_reason"):
        case "max_tokens":
            return TurnEnd("max_tokens", usage)
        case "refusal":
            return TurnEnd("refusal", usage)
        case _:
            return TurnEnd("end_turn", usage)


# -- stdin ------------------------------------------------------------------------------


def user_message(prompt: Prompt) -> dict[str, Any]:
    """The stdin line that starts a turn."""
    blocks = [_block(b) for b in prompt.blocks] or [{"type": "text", "text": ""}]
    return {
        "type": "user",
        "session_id": "",
        "message": {"role": "user", "content": blocks},
        "parent_tool_use_id": None,
    }


def _block(block: ContentBlock) -> dict[str, Any]:
    match block:
        case TextBlock(text):
            return {"type": "text", "text": text}
        case ImageBlock(data, mime_type, _):
            source = {"type": "base64", "media_type": mime_type, "data": data}
            return {"type": "image", "source": source}
        case EmbeddedResourceBlock(uri, text, _):
            return {"type": "text", "text": f'<context ref="{uri}">\n{text}\n</context>'}
        case ResourceLinkBlock(uri, name, _):
            return {"type": "text", "text": f"@{uri} ({name})"}


def control_request(request_id: str, subtype: str, **fields: Any) -> dict[str, Any]:
    request = {"subtype": subtype, **fields}
    return {"type": "control_request", "request_id": request_id, "request": request}


def control_success(request_id: str, response: Mapping[str, Any]) -> dict[str, Any]:
    body = {"subtype": "success", "request_id": request_id, "response": dict(response)}
    return {"type": "control_response", "response": body}


def control_error(request_id: str, error: str) -> dict[str, Any]:
    body = {"subtype": "error", "request_id": request_id, "error": error}
    return {"type": "control_response", "response": body}
