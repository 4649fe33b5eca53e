"""A question the agent puts to the person (the `ask_user` tool; seed 001
`RequestUserInput`, seed 002 `AskUser`), as every frontend receives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Question:
    """`choices` are offered as they are; `allow_text` also accepts an answer in the
    person's own words. `tool_call_id` is the `ask_user` call that asks."""

    session_id: str
    tool_call_id: str
    question: str
    choices: tuple[str, ...] = ()
    allow_text: bool = False

    def to_wire(self) -> dict[str, Any]:
        """The params of the LSP extension request `loopd/session/askUser`."""
        return {
            "sessionId": self.session_id,
            "toolCallId": self.tool_call_id,
            "question": self.question,
            "choices": list(self.choices),
            "allowText": self.allow_text,
        }

    def accepts(self, answer: str) -> bool:
        """An answer the question allows: one of the choices, or (with `allow_text`)
        any non-empty text."""
        return answer in self.choices or (self.allow_text and bool(answer.strip()))


class UserQuestions(Protocol):
    """Someone who can answer: the prompting editor's connection, or a terminal."""

    async def ask_user(self, question: Question) -> str | None:
        """The answer, or None when the person declined or dismissed it."""
        ...
