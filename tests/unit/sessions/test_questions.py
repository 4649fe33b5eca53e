"""The agent's questions reach the prompting link only, bounded like approvals."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.questions import Question
from loopd.runtimes.base import RuntimeContext
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager
from loopd.tools.ask_user import AskUser
from loopd.tools.env import ToolEnv
from loopd.tools.registry import ToolRegistry


@dataclass(eq=False)
class AskedLink(RecordingLink):
    answer: str | None = None  # None: never answers
    questions: list[Question] = field(default_factory=list)

    def can_ask_user(self) -> bool:
        return True

    async def ask_user(self, question: Question) -> str | None:
        self.questions.append(question)
        if self.answer is None:
            await asyncio.Event().wait()
        return self.answer


def asking(tmp_path: Path) -> tuple[object, ScriptedProvider]:
    question = {"question": "Proceed?", "choices": ["yes", "no"]}
    provider = ScriptedProvider.of(
        Reply(tools=[("q1", "ask_user", question)]), Reply(text="ok"), Reply(text="plain")
    )

    def tools_for(ctx: RuntimeContext) -> ToolRegistry:
        env = ToolEnv(roots=(str(tmp_path),), person=ctx.person, session_id=ctx.session_id)
        return ToolRegistry(env, [AskUser()])

    return scripted_manager(tmp_path, provider, tools_for=tools_for), provider


async def test_an_unanswered_question_times_out_as_no_answer(tmp_path: Path) -> None:
    manager, provider = asking(tmp_path)
    manager.approval_timeout = 0.01  # type: ignore[attr-defined]
    link = AskedLink()
    view = await manager.new_session(str(tmp_path), link)  # type: ignore[attr-defined]
    await manager.prompt(view.id, Prompt((TextBlock("go"),)), link)  # type: ignore[attr-defined]
    assert [q.question for q in link.questions] == ["Proceed?"]
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.content == "The user did not answer the question."


async def test_only_a_link_that_can_answer_is_offered_ask_user(tmp_path: Path) -> None:
    manager, provider = asking(tmp_path)
    watcher, asker = RecordingLink(), AskedLink(answer="yes")
    view = await manager.new_session(str(tmp_path), watcher)  # type: ignore[attr-defined]
    await manager.load_session(view.id, asker, replay=False)  # type: ignore[attr-defined]
    await manager.prompt(view.id, Prompt((TextBlock("go"),)), asker)  # type: ignore[attr-defined]
    assert provider.requests[1].messages[-1].tool_results[0].content == "The user answered: yes"
    await manager.prompt(view.id, Prompt((TextBlock("again"),)), watcher)  # type: ignore[attr-defined]
    assert [s.name for s in provider.requests[2].tools] == []  # nobody to ask: not offered


@dataclass(eq=False)
class OneAtATime(AskedLink):
    """Answers each question after letting every other task run, and records how
    many questions were open at once."""

    open: int = 0
    most: int = 0

    async def ask_user(self, question: Question) -> str | None:
        self.questions.append(question)
        self.open += 1
        self.most = max(self.most, self.open)
        for _ in range(10):
            await asyncio.sleep(0)  # a question asked beside this one would be asked now
        self.open -= 1
        return self.answer


async def test_two_questions_of_one_step_are_asked_one_at_a_time(tmp_path: Path) -> None:
    first = {"question": "Which database?", "choices": ["sqlite", "postgres"]}
    second = {"question": "Which port?", "choices": ["sqlite", "5432"]}
    provider = ScriptedProvider.of(
        Reply(tools=[("q1", "ask_user", first), ("q2", "ask_user", second)]), Reply(text="ok")
    )

    def tools_for(ctx: RuntimeContext) -> ToolRegistry:
        env = ToolEnv(roots=(str(tmp_path),), person=ctx.person, session_id=ctx.session_id)
        return ToolRegistry(env, [AskUser()])

    manager = scripted_manager(tmp_path, provider, tools_for=tools_for)
    link = OneAtATime(answer="sqlite")
    view = await manager.new_session(str(tmp_path), link)
    await manager.prompt(view.id, Prompt((TextBlock("go"),)), link)
    assert [q.question for q in link.questions] == ["Which database?", "Which port?"]
    assert link.most == 1
    results = provider.requests[1].messages[-1].tool_results
    assert [r.content for r in results] == ["The user answered: sqlite"] * 2
