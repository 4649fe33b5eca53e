"""`loopd run`'s connection: a ClientLink that renders a session on a terminal.

The answer goes to stdout (so `loopd run "..." > answer.md` captures the answer and
nothing else); tool activity, thoughts, plans, loopd's own notices (a failed request,
a reply being asked for again) and the spinner go to stderr. When stdout is not a
terminal, each reply is written once it is complete, so a reply that is interrupted
and asked for again is not captured twice. With `--json` every update is one JSON
line on stdout instead.

Approvals are asked on the controlling TTY; with no TTY they are rejected unless
`--yes` was given: a headless run never grants in silence. Everything shown passes
through `render.escape` first.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from loopd.cli.prompter import CHOICES, Prompter, ask_in_background, read_answer
from loopd.cli.render import (
    Style,
    diff_text,
    escape,
    relative,
    tail,
    usage_line,
    wants_colour,
)
from loopd.cli.status import Status
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import NOTICE_META, DiffContent
from loopd.protocol.questions import Question
from loopd.protocol.turns import Outcome
from loopd.tools.access import FileAccess

FAILURE_LINES = 8  # of a failed tool's text: where it says why
OUTPUT_LINES = 8  # of a command's output (with its exit code line): its end, the rest folded
WAITING = "Waiting for the model"
# Updates after which a reply held back (stdout not a terminal) is complete.
_REPLY_ENDS = frozenset({"tool_call", "tool_call_update", "plan", "user_message_chunk"})


@dataclass(slots=True)
class TerminalLink:
    out: TextIO
    err: TextIO
    as_json: bool = False
    assume_yes: bool = False
    yes_because: str = "--yes"
    prompter: Prompter | None = None  # asks on a TTY; None: no one to ask
    questions: Prompter | None = None  # the agent's questions (ask_user), on a TTY
    root: str = ""  # the workspace: paths are shown relative to it
    style: Style = field(default_factory=Style)  # colour on stderr
    status: Status | None = None  # the spinner, on a terminal only
    stream_text: bool = True  # stdout is a terminal: show text as it arrives
    _error_shown: bool = False
    _tools: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (title, kind)
    _running: set[str] = field(default_factory=set)
    _diff_shown: set[str] = field(default_factory=set)  # calls whose diff the question showed
    _pending: list[str] = field(default_factory=list)  # reply text not yet on stdout
    _out_open: bool = False  # stdout's last line has no newline yet
    _asking: int = 0  # questions on the terminal: no spinner may draw over them
    _one_question: asyncio.Lock = field(default_factory=asyncio.Lock)  # asked in turn
    _cost: tuple[float, str] | None = None

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        if self.as_json:
            line = json.dumps({"sessionId": session_id, "update": update}, ensure_ascii=False)
            self.out.write(line + "\n")
            self.out.flush()
            return
        self._render(update)

    def _render(self, update: Mapping[str, Any]) -> None:
        kind = update.get("sessionUpdate", "")
        notice = update.get("_meta", {}).get(NOTICE_META) if kind == "agent_message_chunk" else None
        if kind == "agent_message_chunk" and notice is None:
            self._spin(None)
            self._text(update["content"].get("text", ""))
            return
        if notice == "retry":
            self._pending.clear()  # the interrupted reply comes again in full
        if notice is not None or kind in _REPLY_ENDS:
            self._flush_text()
        match kind:
            case "agent_message_chunk":
                self._notice(notice or "", update["content"].get("text", ""))
            case "agent_thought_chunk":
                self._err(self.style.dim(escape(update["content"].get("text", ""), multiline=True)))
            case "user_message_chunk":
                self._spin(WAITING)
            case "tool_call":
                self._tool_call(update)
            case "tool_call_update":
                self._tool_update(update)
            case "plan":
                self._plan(update.get("entries", []))
            case "usage_update" if update.get("cost"):
                self._cost = (float(update["cost"]["amount"]), str(update["cost"]["currency"]))

    def _text(self, text: str) -> None:
        text = escape(text, multiline=True)
        if not self.stream_text:
            self._pending.append(text)
            return
        self._out(text)

    def _flush_text(self) -> None:
        if self._pending:
            self._out("".join(self._pending))
            self._pending.clear()

    def _out(self, text: str) -> None:
        if not text:
            return
        self._spin(None)
        self.out.write(text)
        self.out.flush()
        self._out_open = not text.endswith("\n")

    def _err(self, text: str) -> None:
        """Write to stderr on a line of its own: stdout's open line is ended first."""
        if self._out_open:
            self._out("\n")
        self._spin(None)
        self.err.write(text)
        self.err.flush()

    def _notice(self, notice: str, text: str) -> None:
        if notice == "error":
            self._error_shown = True
        self._err(self.style.dim(escape(text.strip("\n"), multiline=True)) + "\n")

    def _tool_call(self, update: Mapping[str, Any]) -> None:
        call_id = update["toolCallId"]
        title = escape(update.get("title", "") or call_id)
        self._tools[call_id] = (title, update.get("kind", "other"))
        self._running.add(call_id)
        self._err(f"→ {title}\n")
        self._spin(title)

    def _tool_update(self, update: Mapping[str, Any]) -> None:
        call_id = update["toolCallId"]
        status = update.get("status")
        if status not in ("completed", "failed"):
            return
        title, kind = self._tools.get(call_id, (escape(call_id), "other"))
        self._running.discard(call_id)
        mark = self.style.green("✓") if status == "completed" else self.style.red("✗")
        shown = [f"{mark} {title}\n"]
        for item in update.get("content") or []:
            if item.get("type") == "diff" and call_id not in self._diff_shown:
                path = relative(item["path"], self.root) if self.root else item["path"]
                shown.append(diff_text(path, item.get("oldText"), item["newText"], self.style))
            elif item.get("type") == "content" and (status == "failed" or kind == "execute"):
                lines = FAILURE_LINES if status == "failed" else OUTPUT_LINES
                shown.append(tail(item["content"].get("text", ""), lines, self.style))
        self._err("".join(shown))
        self._spin(WAITING if not self._running else None)

    def _plan(self, entries: Sequence[Mapping[str, Any]]) -> None:
        lines = [f"  [{_mark(e['status'])}] {escape(e['content'])}" for e in entries]
        self._err("Plan:\n" + "\n".join(lines) + "\n")

    def _spin(self, label: str | None) -> None:
        if self.status is None:
            return
        if label is None or self._out_open or self._asking:
            self.status.clear()
        else:
            self.status.show(label)

    def files(self, session_id: str, roots: Sequence[str], local: FileAccess) -> FileAccess:
        return local

    def can_ask_user(self) -> bool:
        return self.questions is not None  # a headless run has no one to ask

    async def ask_user(self, question: Question) -> str | None:
        """The question on stderr with numbered choices; the answer from the TTY (a
        number picks a choice; other text is the answer when free text is allowed)."""
        if self.questions is None:
            return None
        self._flush_text()
        lines = [self.style.bold(f"loopd asks: {escape(question.question)}")]
        lines += [f"  {i}. {escape(c)}" for i, c in enumerate(question.choices, 1)]
        hint = f"1-{len(question.choices)}" if question.choices else ""
        if question.allow_text:
            hint = f"{hint} or your answer" if hint else "your answer"
        async with self._one_question:
            self._err("\n".join(lines) + "\n")
            self._asking += 1
            try:
                reply = (await read_answer(self.questions, f"Answer ({hint}): ") or "").strip()
            finally:
                self._asking -= 1
        if reply.isdigit() and 1 <= int(reply) <= len(question.choices):
            return question.choices[int(reply) - 1]
        return reply or None

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self._flush_text()
        title = escape(request.title)
        why = f"\n  because {escape(request.reason)}" if request.reason else ""
        if self.assume_yes:
            self._err(f"Allowed ({self.yes_because}): {title}{why}\n")
            return ApprovalDecision.ALLOW_ONCE
        if self.prompter is None:
            self._err(f"Rejected: {title} (no terminal to ask; pass --yes to allow){why}\n")
            return ApprovalDecision.REJECT_ONCE
        async with self._one_question:  # parallel calls: one question, then the next
            return await self._question(self.prompter, request, title, why)

    async def _question(
        self, prompter: Prompter, request: ApprovalRequest, title: str, why: str
    ) -> ApprovalDecision:
        shown = [f"{self.style.bold(title)}{why}\n"]
        for item in request.content:
            if isinstance(item, DiffContent):
                path = relative(item.path, self.root) if self.root else item.path
                shown.append(diff_text(path, item.old_text, item.new_text, self.style))
                self._diff_shown.add(request.tool_call_id)
        self._err("".join(shown))
        question = f"Allow {title}? {CHOICES}: "
        self._asking += 1
        try:
            return await ask_in_background(prompter, question)
        except asyncio.CancelledError:
            self.err.write("\n")  # the question's line was left open
            raise
        finally:
            self._asking -= 1
            self._spin(title)

    def finish(self, outcome: Outcome) -> None:
        """End the turn's output: the last reply, a newline, what stopped the turn
        when it did not end normally, and the usage line."""
        self._flush_text()
        if self._out_open:
            self._out("\n")
        self._spin(None)
        if self.as_json:
            return
        if outcome.stop_reason == "cancelled":
            self._err("Cancelled.\n")
        elif outcome.error and not self._error_shown:
            self._err(f"{escape(outcome.error, multiline=True)}\n")
        usage = outcome.usage
        if usage.context_tokens or usage.output_tokens:
            self._err(usage_line(usage.context_tokens, usage.output_tokens, self._cost, self.style))


def terminal_link(
    root: str,
    prompter: Prompter | None,
    *,
    as_json: bool = False,
    assume_yes: bool = False,
    yes_because: str = "--yes",
    questions: Prompter | None = None,
) -> TerminalLink:
    """The terminal frontend on this process's streams: colour, the spinner and text
    streaming only where they are terminals; approvals through `prompter`."""
    spinner = sys.stderr.isatty() and os.environ.get("TERM") != "dumb" and not as_json
    return TerminalLink(
        sys.stdout,
        sys.stderr,
        as_json=as_json,
        assume_yes=assume_yes,
        yes_because=yes_because,
        prompter=prompter,
        questions=questions,
        root=root,
        style=Style(wants_colour(sys.stderr, os.environ)),
        status=Status(sys.stderr, enabled=spinner),
        stream_text=sys.stdout.isatty(),
    )


def _mark(status: str) -> str:
    return {"completed": "x", "in_progress": "~"}.get(status, " ")
