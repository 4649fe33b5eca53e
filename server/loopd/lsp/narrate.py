"""Session updates as words, for clients that render nothing of the extension.

A plain LSP client shows two things we can feed: a progress bar (one short "step"
line) and the log (`window/logMessage`). `Narrator` turns the ACP update stream into
both: streamed chunks are gathered and logged as whole paragraphs when the kind of
update changes, tool calls become one line each when they start and when they end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_SPEAKERS = {
    "user_message_chunk": "you",
    "agent_message_chunk": "loopd",
    "agent_thought_chunk": "loopd (thinking)",
}
_STEPS = {"agent_message_chunk": "Writing", "agent_thought_chunk": "Thinking"}


@dataclass(slots=True)
class Narration:
    lines: list[str] = field(default_factory=list)
    step: str | None = None  # the progress message, when this update moved it on


@dataclass(slots=True)
class Narrator:
    _kind: str | None = None
    _text: list[str] = field(default_factory=list)
    _titles: dict[str, str] = field(default_factory=dict)

    def feed(self, update: Mapping[str, Any]) -> Narration:
        kind = str(update.get("sessionUpdate"))
        out = Narration()
        if kind in _SPEAKERS:
            if kind != self._kind:
                out.lines.extend(self.flush())
                self._kind = kind
                out.step = _STEPS.get(kind)
            self._text.append(_chunk_text(update.get("content")))
            return out
        out.lines.extend(self.flush())
        match kind:
            case "tool_call":
                title = str(update.get("title", ""))
                self._titles[str(update.get("toolCallId"))] = title
                out.lines.append(f"[tool] {title} ({update.get('status', 'pending')})")
                out.step = title
            case "tool_call_update" if update.get("status") in ("completed", "failed"):
                call_id = str(update.get("toolCallId"))
                title = str(update.get("title") or self._titles.get(call_id, call_id))
                out.lines.append(f"[tool] {title}: {update['status']}")
                out.step = f"{title}: {update['status']}"
            case "plan":
                entries = update.get("entries") or []
                done = sum(1 for e in entries if e.get("status") == "completed")
                out.lines.append("[plan]")
                out.lines.extend(
                    f"  [{_mark(e.get('status'))}] {e.get('content')}" for e in entries
                )
                out.step = f"Plan {done}/{len(entries)}"
            case "current_mode_update":
                out.lines.append(f"[mode] {update.get('currentModeId')}")
        return out

    def flush(self) -> list[str]:
        if self._kind is None:
            return []
        text = "".join(self._text).strip()
        speaker = _SPEAKERS[self._kind]
        self._kind, self._text = None, []
        return [f"{speaker}: {text}"] if text else []


def _chunk_text(content: Any) -> str:
    if not isinstance(content, Mapping):
        return ""
    if content.get("type") == "text":
        return str(content.get("text", ""))
    if content.get("type") == "resource":
        return f"\n[{content.get('resource', {}).get('uri')}]\n"
    if content.get("type") == "resource_link":
        return f"[{content.get('uri')}]"
    return ""


def _mark(status: Any) -> str:
    return {"completed": "x", "in_progress": "~"}.get(str(status), " ")
