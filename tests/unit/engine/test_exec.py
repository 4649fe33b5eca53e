"""`Engine.exec`: a command the person typed runs through the bash tool, the policy
and the approver; the screen gets tool events, the history ONE user message."""

from __future__ import annotations

import asyncio

from loopd.engine.loop import EXEC_TOOL, exec_message
from loopd.engine.ports import Verdict
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.events import TextBlock, ToolCallStarted, ToolCallUpdated
from loopd.protocol.messages import Message, TextPart
from loopd.testing.fakes import (
    FakeToolBox,
    Reply,
    ScriptedApprover,
    ScriptedPolicy,
    ScriptedProvider,
)
from tests.unit.engine.test_loop import Rig, ask


def only_message(rig: Rig) -> Message:
    [message] = rig.journal.messages
    return message


async def test_the_output_reaches_the_screen_as_tool_events_and_the_history_as_text() -> None:
    rig = Rig(ScriptedProvider.of())
    engine = rig.engine()
    outcome = await engine.exec("ls -la")

    assert outcome.stop_reason == "end_turn"
    assert outcome.iterations == 0
    assert rig.provider.requests == []  # the model is not asked
    [started] = rig.emitter.of(ToolCallStarted)
    assert (started.title, started.kind) == ("Run `ls -la`", "execute")
    assert rig.statuses(started.tool_call_id) == ["in_progress", "completed"]
    assert only_message(rig) == Message("user", (TextPart(exec_message("ls -la", "bash ok")),))
    assert engine.history == (only_message(rig),)
    assert "$ ls -la" in exec_message("ls -la", "x")


async def test_the_next_turn_sees_what_the_person_ran() -> None:
    rig = Rig(ScriptedProvider.of(Reply(text="I see it")))
    engine = rig.engine()
    await engine.exec("make")
    await engine.run(ask("why did it fail?"))
    sent = rig.provider.requests[0].messages
    assert [m.role for m in sent] == ["user", "user"]
    assert not sent[0].tool_results
    assert "$ make" in sent[0].parts[0].text  # type: ignore[union-attr]


async def test_a_denied_command_is_shown_and_recorded_with_the_reason() -> None:
    rig = Rig(ScriptedProvider.of(), policy=ScriptedPolicy({EXEC_TOOL: Verdict.DENY}))
    outcome = await rig.engine().exec("rm -rf /")
    assert outcome.stop_reason == "end_turn"
    assert rig.tools.started == []
    [update] = rig.emitter.of(ToolCallUpdated)
    assert update.status == "failed"
    assert update.content == (TextBlock("Denied by policy: bash policy"),)
    assert "Denied by policy: bash policy" in only_message(rig).parts[0].text  # type: ignore[union-attr]


async def test_a_crossing_is_put_to_the_person_like_the_models() -> None:
    rig = Rig(
        ScriptedProvider.of(),
        policy=ScriptedPolicy({EXEC_TOOL: Verdict.ASK}),
        approver=ScriptedApprover.of(ApprovalDecision.REJECT_ONCE),
    )
    await rig.engine().exec("curl example.com")
    [request] = rig.approver.requests
    assert (request.tool_name, request.title) == ("bash", "Run `curl example.com`")
    assert rig.policy.remembered == [("bash", ApprovalDecision.REJECT_ONCE)]
    assert rig.tools.started == []
    assert "The user rejected this call." in only_message(rig).parts[0].text  # type: ignore[union-attr]


async def test_cancelling_a_running_command_pairs_the_screen_and_the_history() -> None:
    hold = asyncio.Event()
    rig = Rig(ScriptedProvider.of(), tools=FakeToolBox(hold=hold))
    engine = rig.engine()
    task = asyncio.create_task(engine.exec("sleep 100"))
    await rig.tools.running.wait()
    task.cancel()
    outcome = await task
    assert outcome.stop_reason == "cancelled"
    [started] = rig.emitter.of(ToolCallStarted)
    assert rig.statuses(started.tool_call_id) == ["in_progress", "failed"]
    assert "Cancelled by the user." in only_message(rig).parts[0].text  # type: ignore[union-attr]


async def test_cancelling_in_the_approval_ends_cancelled() -> None:
    rig = Rig(
        ScriptedProvider.of(),
        policy=ScriptedPolicy({EXEC_TOOL: Verdict.ASK}),
        approver=ScriptedApprover.of(ApprovalDecision.CANCELLED),
    )
    outcome = await rig.engine().exec("make deploy")
    assert outcome.stop_reason == "cancelled"
    assert rig.tools.started == []
