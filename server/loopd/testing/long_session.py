"""A long session for the fake LLM server: a model that reads a file, then answers
at length, and writes the summaries compaction asks for, whenever it asks.

`LongSession.respond` is a `FakeLLMServer` responder; `pairs_intact` and
`request_tokens` check what was sent. Used by the context tests, the end-to-end
ACP test and the context benchmark, so all three exercise the same session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopd.context.reminders import OPEN as REMINDER
from loopd.testing.llm_script import RecordedRequest, Reply, ScriptedCall, Step

SUMMARY = "Summary: the person asks about one module after another; each was read and explained."


@dataclass(slots=True)
class LongSession:
    """Each prompt gets `reads` steps that `read` a file, each saying `talk_words`
    words beside its call, then a reply of `reply_words` words. A request that asks
    for a summary gets `SUMMARY`.

    With many reads and some talk, one turn grows step by step through the window:
    the case where a compaction inside the turn leaves the context high, and the
    next steps must still be judged as they will be sent."""

    reply_words: int = 1_500
    reads: int = 1
    talk_words: int = 0
    summaries: int = 0
    turns: int = 0
    steps: int = 0  # the reads of the current turn

    def respond(self, request: RecordedRequest) -> Step:
        body = request.body
        if "summary of a coding session" in _system(body):
            self.summaries += 1
            return Reply(text=f"{SUMMARY} ({self.summaries})", output_tokens=40)
        self.steps = self.steps + 1 if _last_is_tool_result(body) else 0
        if self.steps >= self.reads:
            self.turns += 1
            return _at_most(f"Answer {self.turns}: {_words(self.reply_words)}", _max_output(body))
        where = {"offset": self.steps + 1} if self.steps else {}  # no repeated call
        call = ScriptedCall("read", {"path": "module.py", **where})
        talk = f"Step {self.steps + 1}: {_words(self.talk_words)}" if self.talk_words else ""
        return Reply(text=talk, output_tokens=_tokens(talk), tool_calls=(call,))


def _words(count: int) -> str:
    return " ".join(f"word{i % 97}" for i in range(count))


def _max_output(body: dict[str, Any]) -> int | None:
    value = body.get("max_tokens") or body.get("max_output_tokens")
    return value if isinstance(value, int) else None


def _at_most(text: str, limit: int | None) -> Reply:
    """`text` as a model asked for at most `limit` tokens says it (by the fake's rule,
    4 bytes a token): cut at a word, ending for `max_tokens`, when it is longer."""
    tokens = _tokens(text)
    if limit is None or tokens <= limit:
        return Reply(text=text, output_tokens=tokens)
    cut = text[: limit * 4].rsplit(" ", 1)[0]
    return Reply(text=cut, output_tokens=limit, stop="max_tokens")


def _tokens(text: str) -> int:
    return -(-len(text.encode()) // 4)


def _system(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return " ".join(str(b.get("text", "")) for b in system)
    if isinstance(system, str):
        return system
    first = (body.get("messages") or [{}])[0]
    return str(first.get("content")) if first.get("role") == "system" else ""


def _last_is_tool_result(body: dict[str, Any]) -> bool:
    """Whether the request answers tool calls: its last message holds their results,
    or only reminders follow them (a budget notice rides as a message of its own)."""
    messages = [m for m in body.get("messages") or [] if not _only_reminders(m)]
    if not messages:
        return False
    last = messages[-1]
    if last.get("role") == "tool":
        return True
    content = last.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def _only_reminders(message: dict[str, Any]) -> bool:
    if message.get("role") != "user":
        return False
    content = message.get("content")
    blocks = [{"text": content}] if isinstance(content, str) else content or [{}]
    texts = [str(b.get("text", "")) for b in blocks if b.get("type", "text") == "text"]
    return len(texts) == len(blocks) and all(t.startswith(REMINDER) for t in texts)


def request_tokens(request: RecordedRequest) -> int:
    """The request's size by the fake's own rule: ceil(bytes / 4)."""
    return -(-request.size // 4)


def pairs_intact(body: dict[str, Any]) -> bool:
    """Every tool call sent is answered by a result right after it, and every result
    answers a call right before it (Anthropic and OpenAI Chat bodies)."""
    messages = body.get("messages") or []
    open_calls: set[str] = set()
    for message in messages:
        calls, results = _calls(message), _results(message)
        if results and not results <= open_calls:
            return False
        open_calls -= results
        if calls:
            if open_calls:
                return False
            open_calls = calls
        elif not results and open_calls:
            return False
    return not open_calls


def _calls(message: dict[str, Any]) -> set[str]:
    if message.get("role") != "assistant":
        return set()
    found = {c["id"] for c in message.get("tool_calls") or []}
    content = message.get("content")
    if isinstance(content, list):
        found |= {b["id"] for b in content if b.get("type") == "tool_use"}
    return found


def _results(message: dict[str, Any]) -> set[str]:
    if message.get("role") == "tool":
        return {str(message["tool_call_id"])}
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return set()
    return {b["tool_use_id"] for b in content if b.get("type") == "tool_result"}
