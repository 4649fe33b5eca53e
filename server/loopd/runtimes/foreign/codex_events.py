"""`codex app-server` notifications and approval requests, in loopd's vocabulary.

Pure: no I/O. `CodexTranslator` is fed each server notification (method, params) in
order and returns the events to emit; the functions below build the approval
question for a server request and the decision that answers it. Shapes are the ones
recorded from codex 0.171.0 (research/foreign.md §3.2; fixtures under
tests/unit/runtimes/fixtures).

Why state: the file-change approval request carries no diff, so the diff is taken
from the `item/started` fileChange item with the same id; and a message or reasoning
item that never streamed deltas is shown whole when it completes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import (
    AgentMessageChunk,
    AgentThoughtChunk,
    DiffContent,
    Location,
    PlanEntry,
    PlanStatus,
    PlanUpdated,
    SessionEvent,
    SessionInfoUpdated,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    ToolContent,
    ToolKind,
    ToolStatus,
    UsageUpdated,
)
from loopd.protocol.model import Usage
from loopd.protocol.turns import StopReason


@dataclass(frozen=True, slots=True)
class Policy:
    """A loopd mode as codex sees it: when to ask, and how far commands may reach."""

    approval: str
    sandbox: str  # thread/start spelling: read-only | workspace-write | danger-full-access


POLICIES: Final = {
    "plan": Policy("on-request", "read-only"),
    "ask": Policy("untrusted", "workspace-write"),
    "accept_edits": Policy("on-request", "workspace-write"),
    # never asks; commands stay in codex's workspace sandbox, and what would need an
    # approval fails back to the model (loopd's full_auto: refused, never unbounded)
    "full_auto": Policy("never", "workspace-write"),
}


def sandbox_policy(sandbox: str, extra_roots: Sequence[str]) -> dict[str, Any]:
    """The turn/start `sandboxPolicy` object for a thread/start sandbox name."""
    match sandbox:
        case "read-only":
            return {"type": "readOnly"}
        case "workspace-write":
            return {"type": "workspaceWrite", "writableRoots": list(extra_roots)}
        case _:
            return {"type": "dangerFullAccess"}


# -- items as the person sees them ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ItemView:
    title: str
    kind: ToolKind
    raw_input: Mapping[str, Any]
    locations: tuple[Location, ...] = ()
    content: tuple[ToolContent, ...] = ()


_SHELL_WRAPPER = re.compile(r"^(?:/bin/)?(?:ba|z)?sh -l?c '(.*)'$", re.DOTALL)


def command_view(item: Mapping[str, Any], cwd: str) -> ItemView:
    command = str(item.get("command", ""))
    actions = item.get("commandActions") or []
    shown = _SHELL_WRAPPER.sub(r"\1", command)
    kind: ToolKind = "execute"
    locations: tuple[Location, ...] = ()
    if len(actions) == 1:
        action = actions[0]
        shown = str(action.get("command") or shown)
        if action.get("type") == "read" and action.get("path"):
            kind, locations = "read", (Location(_absolute(str(action["path"]), cwd)),)
        elif action.get("type") in ("listFiles", "search"):
            kind = "search"
    raw = {"command": command, "cwd": item.get("cwd") or cwd}
    return ItemView(shown, kind, raw, locations)


def file_change_view(item: Mapping[str, Any]) -> ItemView:
    changes = item.get("changes") or []
    paths = [str(c.get("path", "")) for c in changes]
    diffs = tuple(_diff(c) for c in changes)
    title = "Edit " + ", ".join(os.path.basename(p) for p in paths)
    return ItemView(title, "edit", {"changes": changes}, tuple(Location(p) for p in paths), diffs)


def _diff(change: Mapping[str, Any]) -> DiffContent:
    path, diff = str(change.get("path", "")), str(change.get("diff", ""))
    kind = (change.get("kind") or {}).get("type")
    if kind == "add":
        return DiffContent(path, None, diff)
    if kind == "delete":
        return DiffContent(path, diff, "")
    old, new = unified_sides(diff)
    return DiffContent(path, old, new)


def unified_sides(diff: str) -> tuple[str, str]:
    """The old and new text a unified diff's hunks show (context lines in both)."""
    old: list[str] = []
    new: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++", "@@", "diff ", "index ")):
            continue
        if line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            old.append(line[1:])
            new.append(line[1:])
    return "\n".join(old), "\n".join(new)


def _absolute(path: str, cwd: str) -> str:
    return path if os.path.isabs(path) else os.path.join(cwd, path)


def item_view(item: Mapping[str, Any], cwd: str) -> ItemView | None:
    """How a tool-like item is shown; None for items that are not tool calls."""
    match item.get("type"):
        case "commandExecution":
            return command_view(item, cwd)
        case "fileChange":
            return file_change_view(item)
        case "mcpToolCall":
            title = f"{item.get('server', '')}: {item.get('tool', '')}"
            return ItemView(title, "other", {"arguments": item.get("arguments")})
        case "webSearch":
            return ItemView(f"Search the web: {item.get('query', '')}", "fetch", {})
        case _:
            return None


# -- notifications -> events ------------------------------------------------------------

_PLAN_STATUS: Final[dict[str, PlanStatus]] = {
    "pending": "pending",
    "inProgress": "in_progress",
    "completed": "completed",
}


class CodexTranslator:
    def __init__(self, cwd: str) -> None:
        self._cwd = cwd
        self._streamed: set[str] = set()
        self.items: dict[str, Mapping[str, Any]] = {}
        self.usage = Usage()  # the last model request's

    def translate(self, method: str, params: Mapping[str, Any]) -> list[SessionEvent]:
        match method:
            case "item/agentMessage/delta":
                return self._chunk(AgentMessageChunk, params)
            case "item/reasoning/summaryTextDelta" | "item/reasoning/textDelta":
                return self._chunk(AgentThoughtChunk, params)
            case "item/started":
                return self._started(params.get("item") or {})
            case "item/completed":
                return self._completed(params.get("item") or {})
            case "turn/plan/updated":
                return [PlanUpdated(plan_entries(params.get("plan") or ()))]
            case "thread/tokenUsage/updated":
                usage = params.get("tokenUsage") or {}
                last = usage.get("last") or {}
                cached = int(last.get("cachedInputTokens") or 0)
                self.usage = Usage(
                    input_tokens=int(last.get("inputTokens") or 0) - cached,
                    output_tokens=int(last.get("outputTokens") or 0),
                    cache_read_tokens=cached,
                    cache_write_tokens=int(last.get("cacheWriteInputTokens") or 0),
                )
                size = int(usage.get("modelContextWindow") or 0)
                return [UsageUpdated(used=int(last.get("totalTokens") or 0), size=size)]
            case "thread/name/updated" if params.get("threadName"):
                return [SessionInfoUpdated(title=str(params["threadName"]))]
            case _:
                return []

    def _chunk(
        self, event: type[AgentMessageChunk | AgentThoughtChunk], params: Mapping[str, Any]
    ) -> list[SessionEvent]:
        item_id, delta = str(params.get("itemId", "")), str(params.get("delta", ""))
        self._streamed.add(item_id)
        return [event(delta, item_id)] if delta else []

    def _started(self, item: Mapping[str, Any]) -> list[SessionEvent]:
        item_id = str(item.get("id", ""))
        view = item_view(item, self._cwd)
        if view is None:
            return []
        self.items[item_id] = item
        return [
            ToolCallStarted(
                item_id,
                view.title,
                view.kind,
                "in_progress",
                view.raw_input,
                view.locations,
                view.content,
            )
        ]

    def _completed(self, item: Mapping[str, Any]) -> list[SessionEvent]:
        item_id, kind = str(item.get("id", "")), item.get("type")
        streamed = item_id in self._streamed
        self._streamed.discard(item_id)
        if kind == "agentMessage":
            text = str(item.get("text") or "")
            return [AgentMessageChunk(text, item_id)] if text and not streamed else []
        if kind == "reasoning":
            text = "\n".join(str(s) for s in item.get("summary") or ())
            return [AgentThoughtChunk(text, item_id)] if text and not streamed else []
        if self.items.pop(item_id, None) is None:
            return []
        return [_finished(item)]


def _finished(item: Mapping[str, Any]) -> ToolCallUpdated:
    item_id = str(item.get("id", ""))
    status: ToolStatus = "completed" if item.get("status") == "completed" else "failed"
    if item.get("type") == "commandExecution":
        output = str(item.get("aggregatedOutput") or "")
        raw = {"exit_code": item.get("exitCode"), "output": output, "status": item.get("status")}
        content = (TextBlock(f"```\n{output.rstrip()}\n```"),) if output.strip() else None
        return ToolCallUpdated(item_id, status=status, content=content, raw_output=raw)
    if item.get("type") == "mcpToolCall":
        raw = {"result": item.get("result"), "error": item.get("error")}
        return ToolCallUpdated(item_id, status=status, raw_output=raw)
    return ToolCallUpdated(item_id, status=status, raw_output={"status": item.get("status")})


def plan_entries(plan: Sequence[Mapping[str, Any]]) -> tuple[PlanEntry, ...]:
    return tuple(
        PlanEntry(
            str(s.get("step", "")), "medium", _PLAN_STATUS.get(s.get("status", ""), "pending")
        )
        for s in plan
    )


# -- turn end ---------------------------------------------------------------------------


def turn_end(turn: Mapping[str, Any]) -> tuple[StopReason, str | None]:
    """The stop reason and error of a `turn/completed` turn."""
    match turn.get("status"):
        case "completed":
            return "end_turn", None
        case "interrupted":
            return "cancelled", None
        case _:
            error = (turn.get("error") or {}).get("message") or "the turn failed"
            return "end_turn", f"Codex: {error}"


# -- approvals --------------------------------------------------------------------------

APPROVAL_METHODS: Final = (
    "item/commandExecution/requestApproval",
    "item/fileChange/requestApproval",
)
_FILE_DECISIONS: Final = ("accept", "acceptForSession", "decline", "cancel")


def approval_request(
    session_id: str,
    method: str,
    params: Mapping[str, Any],
    item: Mapping[str, Any] | None,
    cwd: str,
) -> ApprovalRequest:
    """The question for a command or file-change approval request. `item` is the
    matching `item/started` item (the only place a file change's diff appears)."""
    item_id = str(params.get("itemId", ""))
    if method == "item/fileChange/requestApproval":
        view = file_change_view(item or {})
        name = "apply_patch"
    else:
        view = command_view({**(item or {}), **params}, cwd)
        name = "shell"
    return ApprovalRequest(
        session_id=session_id,
        tool_call_id=item_id,
        tool_name=name,
        title=view.title,
        kind=view.kind,
        raw_input=view.raw_input,
        reason=str(params.get("reason") or ""),
        content=view.content,
        locations=view.locations,
    )


def codex_decision(decision: ApprovalDecision, offered: Sequence[Any] | None) -> Any:
    """The decision value to send, chosen among those the server offered."""
    choices = list(offered) if offered else list(_FILE_DECISIONS)
    if decision is ApprovalDecision.ALLOW_ALWAYS:
        for choice in choices:
            if choice == "acceptForSession" or (
                isinstance(choice, dict) and "acceptWithExecpolicyAmendment" in choice
            ):
                return choice
        return "accept"
    if decision.allowed:
        return "accept"
    if decision is ApprovalDecision.CANCELLED or "decline" not in choices:
        return "cancel"
    return "decline"
