"""`ask_user`: put a question to the person, with choices and optionally free text.

Offered only where someone can answer: the prompting editor's connection, or the
terminal of `loopd run`; a headless run has no one, and a tool the model may call
but nobody can answer would only produce a guess presented as the person's word.
The answer goes back to the model as the person's; a dismissed question says so.
"""

from __future__ import annotations

from typing import Any, ClassVar

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.protocol.events import TextBlock, ToolKind
from loopd.protocol.questions import Question
from loopd.tools.base import Args, failure
from loopd.tools.env import RUNNING_CALL, ToolEnv
from loopd.tools.schema import arguments, flag, text


class AskUser:
    name = "ask_user"
    kind: ToolKind = "think"  # no effect outside the conversation
    description = (
        "Ask the user a question when you cannot go on without their decision (which "
        "of two designs, whether a risky step is wanted, what a name should be). Give "
        "the choices you see; set allow_text to let them answer in their own words. "
        "Do not ask what you can find out yourself by reading the workspace."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(
        ["question"],
        question=text(),
        choices={
            "type": "array",
            "items": text(),
            "maxItems": 10,
            "description": "The answers to offer.",
        },
        allow_text=flag("Also accept a free-text answer; default false."),
    )

    def offered(self, env: ToolEnv) -> bool:
        return env.person() is not None

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        return Declaration(title=f"Ask: {args['question']}", kind=self.kind, asks_person=True)

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        person = env.person()
        if person is None:
            return failure("Nobody can answer questions here; decide yourself and say so.")
        choices = tuple(dict.fromkeys(args.get("choices", ())))
        allow_text = bool(args.get("allow_text", False)) or not choices
        question = Question(
            env.session_id, RUNNING_CALL.get(), args["question"], choices, allow_text
        )
        answer = await person.ask_user(question)
        if answer is None or not question.accepts(answer):
            text = "The user did not answer the question."
            return ToolResult(text, content=(TextBlock(text),), raw_output={"answer": None})
        return ToolResult(
            f"The user answered: {answer}",
            content=(TextBlock(answer),),
            raw_output={"answer": answer},
        )
