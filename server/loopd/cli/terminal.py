"""`loopd run`'s connection: a ClientLink that renders a session on a terminal.

Text goes to stdout (so `loopd run "..." > answer.md` captures the answer); tool
activity, thoughts and plans go to stderr; a failed tool call shows the end of its
text there, so a refusal is read with its reason. With `--json` every update is one
JSON line on stdout instead. Approvals are asked on the controlling TTY; with no TTY they
are rejected unless `--yes` was given: a headless run never grants in silence.
"""

from __future__ import annotations

import asyncio
import difflib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import DiffContent
from loopd.tools.env import FileAccess

Prompter = Callable[[str], str]

_ANSWERS = {
    "y": ApprovalDecision.ALLOW_ONCE,
    "yes": ApprovalDecision.ALLOW_ONCE,
    "a": ApprovalDecision.ALLOW_ALWAYS,
    "always": ApprovalDecision.ALLOW_ALWAYS,
    "n": ApprovalDecision.REJECT_ONCE,
    "no": ApprovalDecision.REJECT_ONCE,
    "never": ApprovalDecision.REJECT_ALWAYS,
}


@dataclass(slots=True)
class TerminalLink:
    out: TextIO
    err: TextIO
    as_json: bool = False
    assume_yes: bool = False
    yes_because: str = "--yes"
    prompter: Prompter | None = None  # asks on a TTY; None: no one to ask
    _titles: dict[str, str] = field(default_factory=dict)
    _last_kind: str = ""

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        if self.as_json:
            line = json.dumps({"sessionId": session_id, "update": update}, ensure_ascii=False)
            self.out.write(line + "\n")
            self.out.flush()
            return
        self._render(update)

    def _render(self, update: Mapping[str, Any]) -> None:
        kind = update.get("sessionUpdate", "")
        if kind != self._last_kind and self._last_kind == "agent_message_chunk":
            self.out.write("\n")
        self._last_kind = kind
        match kind:
            case "agent_message_chunk":
                self.out.write(update["content"].get("text", ""))
                self.out.flush()
            case "agent_thought_chunk":
                self.err.write(update["content"].get("text", ""))
            case "tool_call":
                self._titles[update["toolCallId"]] = update.get("title", "")
                self.err.write(f"\n→ {update.get('title', '')}\n")
            case "tool_call_update":
                self._render_tool_update(update)
            case "plan":
                entries = update.get("entries", [])
                lines = [f"  [{_mark(e['status'])}] {e['content']}" for e in entries]
                self.err.write("Plan:\n" + "\n".join(lines) + "\n")
        self.err.flush()

    def _render_tool_update(self, update: Mapping[str, Any]) -> None:
        status = update.get("status")
        if status not in ("completed", "failed"):
            return
        title = self._titles.get(update["toolCallId"], update["toolCallId"])
        mark = "✓" if status == "completed" else "✗"
        self.err.write(f"{mark} {title}\n")
        for item in update.get("content") or []:
            if item.get("type") == "diff":
                self.err.write(_diff_text(item["path"], item.get("oldText"), item["newText"]))
            elif item.get("type") == "content" and status == "failed":
                self.err.write(_tail(item["content"].get("text", ""), FAILURE_LINES))

    def files(self, session_id: str, roots: Sequence[str], local: FileAccess) -> FileAccess:
        return local

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        why = f"\n  because {request.reason}" if request.reason else ""
        if self.assume_yes:
            self.err.write(f"Allowed ({self.yes_because}): {request.title}{why}\n")
            return ApprovalDecision.ALLOW_ONCE
        if self.prompter is None:
            self.err.write(
                f"Rejected: {request.title} (no terminal to ask; pass --yes to allow){why}\n"
            )
            return ApprovalDecision.REJECT_ONCE
        self.err.write(f"{request.title}{why}\n")
        for item in request.content:
            if isinstance(item, DiffContent):
                self.err.write(_diff_text(item.path, item.old_text, item.new_text))
        question = f"Allow {request.title}? [y]es / [a]lways / [n]o / ne[v]er: "
        answer = await asyncio.to_thread(self.prompter, question)
        return _ANSWERS.get(answer.strip().lower(), ApprovalDecision.REJECT_ONCE)


FAILURE_LINES = 8


def _tail(text: str, lines: int) -> str:
    """The last `lines` lines of `text`, indented: where a failure says why."""
    kept = text.rstrip("\n").splitlines()[-lines:]
    return "".join(f"  {line}\n" for line in kept)


def _mark(status: str) -> str:
    return {"completed": "x", "in_progress": "~"}.get(status, " ")


def _diff_text(path: str, old: str | None, new: str) -> str:
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path.lstrip('/')}" if old is not None else "/dev/null",
        tofile=f"b/{path.lstrip('/')}",
    )
    text = "".join(lines)
    return text if text.endswith("\n") or not text else text + "\n"


def tty_prompter() -> Prompter | None:
    """Ask on the controlling terminal, even when stdin carries the prompt."""
    try:
        tty = open("/dev/tty", "r+")  # noqa: SIM115 - kept open for the process
    except OSError:
        return None
    if not tty.isatty():
        return None

    def ask(question: str) -> str:
        tty.write(question)
        tty.flush()
        return tty.readline()

    return ask
