"""A child ACP agent's `terminal/*`, served by loopd: the command crosses loopd's
command policy (rules, mode, "always" answers, the person) whether or not the child
asked first, runs in the session's sandbox, and dies with the turn's cancel, the
session and the child. Each test drives a real scripted child (`acp_scripted`)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from loopd.policy.rules import RuleSet
from loopd.policy.tiers import Tier
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import (
    Prompt,
    TerminalContent,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
)
from loopd.testing.fakes import ScriptedApprover
from loopd.testing.processes import ended, running
from loopd.tools.env import ToolLimits
from tests.unit.runtimes.acp_scripted import SECRET, Scripted, probe, scripted
from tests.unit.sandbox.conftest import outside

__all__ = ["outside"]

GO = Prompt((TextBlock("go"),))
REFUSED = -32600


def create(command: str, name: str = "t", **params: Any) -> dict[str, Any]:
    return {"call": "terminal/create", "params": {"command": command, **params}, "as": name}


def on(method: str, name: str = "t", **step: Any) -> dict[str, Any]:
    return {"call": f"terminal/{method}", "params": {"terminalId": f"${name}"}, **step}


def ask_first(command: str, kind: str = "execute") -> dict[str, Any]:
    """The child's own question about a command, before it runs it."""
    options = [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
               {"optionId": "no", "name": "Reject", "kind": "reject_once"}]  # fmt: skip
    call = {"toolCallId": "c1", "title": command, "kind": kind,
            "rawInput": {"command": command}}  # fmt: skip
    return {"call": "session/request_permission", "params": {"toolCall": call, "options": options}}


def results(s: Scripted, method: str) -> list[dict[str, Any]]:
    return [a for a in s.answers() if a["call"] == method]


def sandboxed() -> None:
    if probe().best is Tier.NONE:
        pytest.skip("no OS sandbox on this machine")


class FailingApprover:
    def __init__(self) -> None:
        self.requests: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        raise ConnectionError("the editor went away")


async def test_an_allowed_command_runs_in_the_sandbox(tmp_path: Path, outside: Path) -> None:
    sandboxed()
    line = (f"printf 'out\\n'; touch made.txt; echo key=${{ANTHROPIC_API_KEY:-unset}}; "
            f"touch {outside}/escaped; exit 3")  # fmt: skip
    turn = [create(line), on("wait_for_exit"), on("output"), on("release")]
    async with scripted(tmp_path, [turn]) as s:
        outcome = await s.runtime.prompt(GO)
    assert outcome.stop_reason == "end_turn"
    assert s.initialize()["terminal"] is True
    [created] = results(s, "terminal/create")
    assert created["result"]["terminalId"]
    [waited] = results(s, "terminal/wait_for_exit")
    assert waited["result"] == {"exitCode": 3}
    [output] = results(s, "terminal/output")
    assert output["result"]["output"].startswith("out\nkey=unset\n")  # no secret in its env
    assert output["result"]["exitStatus"] == {"exitCode": 3}
    assert (s.ws / "made.txt").exists()
    assert not (outside / "escaped").exists()  # writes outside the workspace are contained
    assert s.approver.requests == []  # ask mode runs sandboxed commands unasked


async def test_a_deny_rule_refuses_the_command(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "victim").write_text("keep")
    rules = RuleSet.parse(deny=["bash(rm:*)"])
    async with scripted(tmp_path, [[create("ls && rm -f victim")]], rules=rules) as s:
        await s.runtime.prompt(GO)
    [created] = results(s, "terminal/create")
    assert created["error"]["code"] == REFUSED
    assert "denied by the rule bash(rm:*)" in created["error"]["message"]
    assert (s.ws / "victim").exists()
    assert s.approver.requests == []


@pytest.mark.parametrize(
    "approver",
    [
        ScriptedApprover.of(ApprovalDecision.REJECT_ONCE),
        ScriptedApprover.of(ApprovalDecision.CANCELLED),
        FailingApprover(),
    ],
    ids=["rejected", "no answer", "approver failed"],
)
async def test_an_asked_command_the_editor_does_not_allow_never_runs(
    tmp_path: Path, approver: Any
) -> None:
    rules = RuleSet.parse(ask=["bash(touch:*)"])
    turn = [create("touch marker")]
    async with scripted(tmp_path, [turn], rules=rules, approver=approver) as s:
        await s.runtime.prompt(GO)
    [created] = results(s, "terminal/create")
    assert created["error"]["code"] == REFUSED
    assert "refused" in created["error"]["message"]
    assert not (s.ws / "marker").exists()
    [request] = approver.requests
    assert request.title == "Run `touch marker`"
    assert "the rule bash(touch:*) asks first" in request.reason
    [card] = s.emitter.of(ToolCallStarted)  # the person saw what was asked
    assert card.title == "Run `touch marker`"
    assert s.emitter.of(ToolCallUpdated)[-1].status == "failed"


async def test_the_childs_own_question_is_not_asked_twice(tmp_path: Path) -> None:
    """A terminal the child asked about first runs on that answer, once; a command
    it never asked about still goes to the person."""
    rules = RuleSet.parse(ask=["bash(touch:*)"])
    approver = ScriptedApprover.of(ApprovalDecision.ALLOW_ONCE, ApprovalDecision.ALLOW_ONCE)
    turn = [ask_first("touch a"), create("touch a"), on("wait_for_exit"),
            create("touch b", "u"), on("wait_for_exit", "u"), create("touch a", "v")]  # fmt: skip
    approver.answers.append(ApprovalDecision.REJECT_ONCE)
    async with scripted(tmp_path, [turn], rules=rules, approver=approver) as s:
        await s.runtime.prompt(GO)
    asked = [r.title for r in approver.requests]
    assert asked == ["touch a", "Run `touch b`", "Run `touch a`"]
    first, second, third = results(s, "terminal/create")
    assert "result" in first and "result" in second and "error" in third
    assert (s.ws / "a").exists() and (s.ws / "b").exists()


async def test_a_deny_rule_refuses_the_childs_own_question_unasked(tmp_path: Path) -> None:
    """A command the child would run itself is refused by the same rule, and the
    person's "always" answer to a question is kept like a native call's."""
    rules = RuleSet.parse(deny=["bash(rm:*)"])
    approver = ScriptedApprover.of(ApprovalDecision.ALLOW_ALWAYS)
    turn = [ask_first("rm -rf build"), ask_first("npm test")]
    async with scripted(tmp_path, [turn], rules=rules, approver=approver) as s:
        await s.runtime.prompt(GO)
        state = s.runtime.state()
    refused, allowed = (a["result"]["outcome"] for a in s.answers())
    assert refused == {"outcome": "selected", "optionId": "no"}
    assert allowed == {"outcome": "selected", "optionId": "yes"}
    assert [r.title for r in approver.requests] == ["npm test"]
    assert state["approvals"]["allow"] == ["bash(npm test:*)"]


async def test_a_question_loopd_allowed_by_its_claimed_kind_admits_nothing(
    tmp_path: Path,
) -> None:
    """A "read" question is allowed without the person; naming a command in it does
    not let that command's terminal skip the question the policy asks."""
    approver = ScriptedApprover.of(ApprovalDecision.REJECT_ONCE)
    turn = [ask_first("touch sneaky", kind="read"), create("touch sneaky")]
    async with scripted(tmp_path, [turn], mode="plan", approver=approver) as s:
        await s.runtime.prompt(GO)
    [question, created] = s.answers()
    assert question["result"]["outcome"]["optionId"] == "yes"  # loopd allowed the "read"
    assert [r.title for r in approver.requests] == ["Run `touch sneaky`"]
    assert "error" in created
    assert not (s.ws / "sneaky").exists()


async def test_without_a_question_the_policy_still_decides(tmp_path: Path) -> None:
    """Plan mode asks before any command that is not read-only; full auto refuses
    what would ask: a child that never asks gets no further."""
    async with scripted(tmp_path, [[create("touch planned")]], mode="plan") as s:
        approver = s.approver
        approver.when_out = ApprovalDecision.REJECT_ONCE
        await s.runtime.prompt(GO)
    assert [r.title for r in approver.requests] == ["Run `touch planned`"]
    assert not (s.ws / "planned").exists()
    sub = tmp_path / "auto"
    sub.mkdir()
    rules = RuleSet.parse(ask=["bash(touch:*)"])
    async with scripted(sub, [[create("touch auto")]], mode="full_auto", rules=rules) as s:
        await s.runtime.prompt(GO)
    [created] = results(s, "terminal/create")
    assert "full auto never asks" in created["error"]["message"]
    assert not (s.ws / "auto").exists()
    assert s.approver.requests == []


async def test_an_always_answer_is_kept_and_applies_again(tmp_path: Path) -> None:
    rules = RuleSet.parse(ask=["bash(touch:*)"])
    approver = ScriptedApprover.of(ApprovalDecision.REJECT_ALWAYS)
    turn = [create("touch x"), create("touch x", "u")]
    async with scripted(tmp_path, [turn], rules=rules, approver=approver) as s:
        await s.runtime.prompt(GO)
        state = s.runtime.state()
    assert len(approver.requests) == 1  # the second was refused by the answer kept
    assert all("error" in r for r in results(s, "terminal/create"))
    assert state["approvals"]["deny"] == ["bash(touch x)"]


async def test_a_cwd_outside_the_workspace_is_refused(tmp_path: Path, outside: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "link").symlink_to(outside)
    turn = [
        create("pwd", cwd=str(outside)),
        create("pwd", "u", cwd=str(ws / "link")),
        create("pwd", "v", cwd=str(ws / "sub")),
        on("wait_for_exit", "v"),
        on("output", "v"),
    ]
    async with scripted(tmp_path, [turn]) as s:
        await s.runtime.prompt(GO)
    plain, linked, inside = results(s, "terminal/create")
    assert "is outside the session's folders" in plain["error"]["message"]
    assert f"{outside} is outside the session's folders" in linked["error"]["message"]
    assert "result" in inside
    [output] = results(s, "terminal/output")
    assert output["result"]["output"] == f"{ws.resolve() / 'sub'}\n"


async def test_kill_stops_the_command_and_release_forgets_it(tmp_path: Path) -> None:
    turn = [
        create("sleep 1234.1"),
        on("wait_for_exit", background=True),
        on("kill"),
        {"join": True},
        on("output"),
        on("release"),
        on("output"),
    ]
    async with scripted(tmp_path, [turn]) as s:
        await asyncio.wait_for(s.runtime.prompt(GO), 30)
        stopped = await ended("1234.1")
    [waited] = results(s, "terminal/wait_for_exit")
    assert waited["result"].get("signal") or waited["result"].get("exitCode")
    after_kill, after_release = results(s, "terminal/output")
    assert after_kill["result"]["exitStatus"] == waited["result"]
    assert after_release["error"]["code"] == -32602  # released: the id is gone
    assert stopped


async def test_output_is_bounded_head_and_tail(tmp_path: Path) -> None:
    turn = [
        create("seq 1 100000", outputByteLimit=1000),
        on("wait_for_exit"),
        on("output"),
        create("seq 1 100000", "u"),
        on("wait_for_exit", "u"),
        on("output", "u"),
    ]
    limits = ToolLimits(output_max_chars=2000)
    async with scripted(tmp_path, [turn], limits=limits) as s:
        await s.runtime.prompt(GO)
    asked, capped = (r["result"] for r in results(s, "terminal/output"))
    assert len(asked["output"].encode()) <= 1000 and asked["truncated"]
    assert asked["output"].startswith("1\n2\n3\n") and asked["output"].endswith("100000\n")
    assert "characters cut from the middle" in asked["output"]
    assert len(capped["output"].encode()) <= 2000 and capped["truncated"]  # loopd's own cap


async def test_cancel_kills_the_running_terminal(tmp_path: Path) -> None:
    turn = [create("sleep 1234.2"), {"say": "started"}, on("wait_for_exit")]
    async with scripted(tmp_path, [turn]) as s:
        prompt = asyncio.create_task(s.runtime.prompt(GO))
        async with asyncio.timeout(30):
            await s.emitter.wait_for(lambda _: "started" in s.emitter.text)
            await s.runtime.cancel()
            outcome = await prompt
        assert await ended("1234.2")
    assert outcome.stop_reason == "cancelled"
    [waited] = results(s, "terminal/wait_for_exit")
    assert "result" in waited


async def test_the_session_closing_and_the_child_dying_kill_its_terminals(
    tmp_path: Path,
) -> None:
    async with scripted(tmp_path, [[create("sleep 1234.3")]]) as s:
        await s.runtime.prompt(GO)
        assert running("1234.3")
    assert await ended("1234.3")
    crash = tmp_path / "crash"
    crash.mkdir()
    async with scripted(crash, [[create("sleep 1234.4"), {"exit": 3}]]) as s:
        outcome = await asyncio.wait_for(s.runtime.prompt(GO), 30)
        assert outcome.error is not None  # the child died mid-turn
        assert await ended("1234.4")


def _card(update: str, **fields: Any) -> dict[str, Any]:
    """A child's tool call `c9` that shows terminal `$t`."""
    shows = {"type": "terminal", "terminalId": "$t"}
    return {"update": {"sessionUpdate": update, "toolCallId": "c9", "content": [shows], **fields}}


def _shown(s: Scripted) -> list[str]:
    """The texts tool call `c9` showed, in order; no terminal id only loopd knows."""
    events = [e for e in s.emitter.events if isinstance(e, ToolCallStarted | ToolCallUpdated)]
    contents = [c for e in events if e.tool_call_id == "c9" for c in e.content or ()]
    assert not any(isinstance(c, TerminalContent) for c in contents)
    return [c.text for c in contents if isinstance(c, TextBlock)]


async def test_the_output_shows_live_in_the_childs_tool_call(tmp_path: Path) -> None:
    """The command prints, then waits on a FIFO the test opens only once the person
    saw the first line: the output was shown while it ran."""
    (tmp_path / "ws").mkdir()
    os.mkfifo(tmp_path / "ws" / "gate")
    turn = [
        create("printf 'hello\\n'; read line < gate; printf 'bye\\n'"),
        _card("tool_call", title="Run", kind="execute"),
        on("wait_for_exit"),
        _card("tool_call_update", status="completed"),
    ]
    async with scripted(tmp_path, [turn]) as s:
        prompt = asyncio.create_task(s.runtime.prompt(GO))
        async with asyncio.timeout(30):
            await s.emitter.wait_for(lambda _: any("hello" in t for t in _shown(s)))
            await asyncio.to_thread((s.ws / "gate").write_text, "go\n")
            await prompt
    shown = _shown(s)
    assert "bye" not in shown[0]
    assert shown[-1] == "hello\nbye\n\nExit code: 0"


async def test_the_childs_variables_reach_the_command_but_no_secret(tmp_path: Path) -> None:
    env = [{"name": "GREETING", "value": "hi"}, {"name": "API_TOKEN", "value": "t0ken"},
           {"name": "LEAK", "value": SECRET}]  # fmt: skip
    line = 'echo "$GREETING ${API_TOKEN:-none} ${LEAK:-none}"'
    turn = [create(line, env=env), on("wait_for_exit"), on("output")]
    async with scripted(tmp_path, [turn]) as s:
        await s.runtime.prompt(GO)
    [output] = results(s, "terminal/output")
    assert output["result"]["output"] == "hi none none\n"


async def test_the_home_hidden_is_the_editor_s_not_this_process_s(tmp_path: Path) -> None:
    """In the daemon, this process's HOME is another editor's: the child's commands
    run for the editor whose environment the session has."""
    sandboxed()
    editor_home = Path(tempfile.mkdtemp(prefix="loopd-editor-home-", dir="/var/tmp"))
    try:
        (editor_home / ".ssh").mkdir()
        (editor_home / ".ssh" / "id_ed25519").write_text("EDITOR-PRIVATE-KEY")
        (editor_home / "notes.txt").write_text("EDITOR-NOTES")
        line = f'cat "$HOME/.ssh/id_ed25519" {editor_home}/notes.txt; true'
        turn = [create(line), on("wait_for_exit"), on("output"), on("release")]
        async with scripted(tmp_path, [turn], home=editor_home) as s:
            await s.runtime.prompt(GO)
        [output] = results(s, "terminal/output")
        shown = output["result"]["output"]
        assert "No such file" in shown
        assert "EDITOR-PRIVATE-KEY" not in shown and "EDITOR-NOTES" not in shown
    finally:
        shutil.rmtree(editor_home, ignore_errors=True)
