"""How a Claude Code tool call looks to the person, and how its permission question
is put and answered.

Pure. Titles, kinds and previews follow what the person needs to judge a call: the
command for Bash, the path (relative to the workspace) and the diff for edits. The
`can_use_tool` answer echoes the input (the CLI requires it on allow) and, for
"always", sends back the CLI's own suggested rules (research/foreign.md §1.4-1.5).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import DiffContent, Location, TextBlock, ToolContent, ToolKind

_DENY_MESSAGE: Final = "The user refused permission to run this tool."
_UNASKED_MESSAGE: Final = (
    "Refused without asking: this session runs in loopd's full_auto mode, where "
    "anything that would need the user's approval is refused ({title}). Find a way "
    "that needs no approval, or tell the user to switch to a mode that asks."
)
_CANCEL_MESSAGE: Final = "The user cancelled the turn."


# -- tool calls as the person sees them -------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolView:
    title: str
    kind: ToolKind
    locations: tuple[Location, ...] = ()
    content: tuple[ToolContent, ...] = ()


def tool_view(name: str, tool_input: Mapping[str, Any], cwd: str) -> ToolView:
    """Title, kind, locations and preview of one Claude Code tool call."""
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
    shown = _relative(path, cwd)
    match name:
        case "Bash":
            return ToolView(str(tool_input.get("command") or "Run a command"), "execute")
        case "Read":
            line = tool_input.get("offset")
            at = (Location(path, line if isinstance(line, int) else None),) if path else ()
            return ToolView(f"Read {shown}", "read", at)
        case "Write":
            diff = DiffContent(path, None, str(tool_input.get("content", "")))
            return ToolView(f"Write {shown}", "edit", _at(path), (diff,) if path else ())
        case "Edit":
            old, new = str(tool_input.get("old_string", "")), str(tool_input.get("new_string", ""))
            return ToolView(f"Edit {shown}", "edit", _at(path), (DiffContent(path, old, new),))
        case "NotebookEdit":
            return ToolView(f"Edit {shown}", "edit", _at(path))
        case "Glob" | "Grep":
            scope = tool_input.get("path")
            suffix = f" in {_relative(str(scope), cwd)}" if scope else ""
            verb = "Find" if name == "Glob" else "Search"
            return ToolView(f"{verb} {tool_input.get('pattern', '')}{suffix}", "search")
        case "WebFetch":
            return ToolView(f"Fetch {tool_input.get('url', '')}", "fetch")
        case "WebSearch":
            return ToolView(f"Search the web: {tool_input.get('query', '')}", "fetch")
        case "Task" | "Agent":
            return ToolView(str(tool_input.get("description") or name), "think")
        case "TodoWrite":
            return ToolView("Update the plan", "think")
        case "ExitPlanMode":
            plan = str(tool_input.get("plan", ""))
            return ToolView("Ready to code?", "switch_mode", (), (TextBlock(plan),) if plan else ())
        case _:
            return ToolView(mcp_title(name), "other")


def _relative(path: str, cwd: str) -> str:
    if path and os.path.isabs(path) and (path == cwd or path.startswith(cwd.rstrip("/") + "/")):
        return os.path.relpath(path, cwd)
    return path


def _at(path: str) -> tuple[Location, ...]:
    return (Location(path),) if path else ()


def mcp_title(name: str) -> str:
    if name.startswith("mcp__") and name.count("__") >= 2:
        _, server, tool = name.split("__", 2)
        return f"{server}: {tool}"
    return name


# -- permissions ------------------------------------------------------------------------


def approval_request(session_id: str, request: Mapping[str, Any], cwd: str) -> ApprovalRequest:
    """A `can_use_tool` control request as the question put to the person."""
    name = str(request.get("tool_name", ""))
    tool_input = dict(request.get("input") or {})
    view = tool_view(name, tool_input, cwd)
    return ApprovalRequest(
        session_id=session_id,
        tool_call_id=str(request.get("tool_use_id", "")),
        tool_name=name,
        title=view.title,
        kind=view.kind,
        raw_input=tool_input,
        reason=str(request.get("decision_reason") or ""),
        content=view.content,
        locations=view.locations,
    )


def refused_unasked(request: Mapping[str, Any], cwd: str) -> dict[str, Any]:
    """The `can_use_tool` response in full_auto: what would ask is refused, and the
    model is told why (as the native engine's policy tells it)."""
    title = tool_view(str(request.get("tool_name", "")), request.get("input") or {}, cwd).title
    return {"behavior": "deny", "message": _UNASKED_MESSAGE.format(title=title)}


def permission_answer(decision: ApprovalDecision, request: Mapping[str, Any]) -> dict[str, Any]:
    """The `can_use_tool` response for the person's decision. "Always" sends the CLI's
    own suggested rules back (a session rule for the tool when it suggested none)."""
    if not decision.allowed:
        if decision is ApprovalDecision.CANCELLED:
            return {"behavior": "deny", "message": _CANCEL_MESSAGE, "interrupt": True}
        return {"behavior": "deny", "message": _DENY_MESSAGE}
    answer: dict[str, Any] = {"behavior": "allow", "updatedInput": dict(request.get("input") or {})}
    if decision is ApprovalDecision.ALLOW_ALWAYS:
        answer["updatedPermissions"] = request.get("permission_suggestions") or [
            {
                "type": "addRules",
                "rules": [{"toolName": request.get("tool_name", "")}],
                "behavior": "allow",
                "destination": "session",
            }
        ]
    return answer
