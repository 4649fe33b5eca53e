"""`loopd/review/*` through the real `loopd lsp` (the shipped app, the native engine's
write tool, the fake model): the client reviews each write hunk by hunk, exactly the
accepted hunks land, and the model's next request says what was rejected."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from loopd.protocol.wire import shapes
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, home
from tests.e2e.conftest import LOOPD
from tests.e2e.lsp.conftest import Editor, Start, start, until

__all__ = ["home", "start"]

pytestmark = pytest.mark.e2e

OLD = "a = 1\nkeep = True\nb = 2\n"
NEW = "a = 10\nkeep = True\nb = 20\n"
OPT_IN = {"sessionUpdate": True, "requestPermission": True, "askUser": True}


def call(name: str, **args: Any) -> Reply:
    return Reply(tool_calls=(ScriptedCall(name, args),))


def app_edited(home: Home, new: str) -> Path:
    """app.py holds OLD; the model reads it, writes `new`, then ends its turn."""
    target = home.root / "app.py"
    target.write_text(OLD)
    read, write = call("read", path="app.py"), call("write", path="app.py", content=new)
    home.fake.script("*", read, write, Reply(text="Ok."))
    return target


async def reviewing(
    start: Start, home: Home, answer: Any, review: Any = True, **extra: str
) -> tuple[Editor, list[dict[str, Any]], list[dict[str, Any]]]:
    """A VS Code-like editor that reviews writes: each proposal answered `answer(params)`."""
    editor = await start(
        {}, server=([*LOOPD, "lsp"], home.env(**extra)), loopd={**OPT_IN, "review": review}
    )
    proposals: list[dict[str, Any]] = []
    settled: list[dict[str, Any]] = []

    @editor.client.feature("loopd/review/propose")
    def on_propose(params: dict[str, Any]) -> Any:
        shapes.ReviewProposal.model_validate(params)  # the wire is what the models say
        proposals.append(params)
        return answer(params)

    @editor.client.feature("loopd/review/settled")
    def on_settled(params: dict[str, Any]) -> None:
        shapes.ReviewSettled.model_validate(params)
        settled.append(params)

    editor.answers += ["allow_once"] * 4
    return editor, proposals, settled


async def prompt(editor: Editor) -> dict[str, Any]:
    sid = await editor.new_session()
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": "change it"}]}
    result: dict[str, Any] = await editor.request("loopd/session/prompt", params)
    return result


def told(home: Home) -> str:
    """What the model's last request carried back (the tool result)."""
    return json.dumps(home.fake.requests[-1].body["messages"][-1])


def by_person(*decisions: str) -> Any:
    def answer(params: dict[str, Any]) -> dict[str, Any]:
        pairs = zip(params["hunks"], decisions, strict=True)
        hunks = [{"index": h["index"], "decision": d} for h, d in pairs]
        return {"hunks": hunks, "by": "person"}

    return answer


async def test_one_hunk_rejected_the_other_accepted_lands_alone_and_the_model_is_told(
    start: Start, home: Home
) -> None:
    target = app_edited(home, NEW)
    editor, proposals, settled = await reviewing(start, home, by_person("accept", "reject"))
    assert (await prompt(editor))["stopReason"] == "end_turn"

    assert target.read_text() == "a = 10\nkeep = True\nb = 2\n"
    [proposal] = proposals
    assert proposal["path"] == str(target) and proposal["relativePath"] == "app.py"
    assert proposal["oldText"] == OLD and proposal["newText"] == NEW
    assert [(h["oldStart"], h["oldText"], h["newText"]) for h in proposal["hunks"]] == [
        (0, "a = 1\n", "a = 10\n"),
        (2, "b = 2\n", "b = 20\n"),
    ]
    assert proposal["alwaysAsk"] is False
    assert proposal["toolCallId"]
    result = told(home)
    assert "rejected 1 of its 2 hunks" in result
    assert "Rejected hunk 2 (old lines 3-3)" in result and "+b = 20" in result
    assert "a = 10" not in result.split("Rejected hunk")[1]  # the accepted one is not named
    await until(lambda: settled)
    assert settled[0]["reviewId"] == proposal["reviewId"] and settled[0]["written"] is True


async def test_every_hunk_rejected_writes_nothing_and_the_call_failed(
    start: Start, home: Home
) -> None:
    target = app_edited(home, NEW)
    editor, _, settled = await reviewing(start, home, by_person("reject", "reject"))
    await prompt(editor)

    assert target.read_text() == OLD
    result = told(home)
    assert "rejected this change to app.py: the file is unchanged" in result
    assert '"is_error": true' in result
    await until(lambda: settled)
    assert settled[0]["written"] is False


@pytest.mark.parametrize("spelled", ["a/../.vscode/settings.json", "conf/settings.json"])
async def test_an_always_ask_path_is_never_accepted_by_a_timer_however_it_is_spelled(
    start: Start, home: Home, spelled: str
) -> None:
    """`conf` is a symlink to `.vscode`: the canonical path decides, and the server
    holds the rule even when the client's timer says accept."""
    (home.root / ".vscode").mkdir()
    (home.root / "a").mkdir()
    os.symlink(home.root / ".vscode", home.root / "conf")
    target = home.root / ".vscode" / "settings.json"
    home.fake.script("*", call("write", path=spelled, content="{}\n"), Reply(text="Ok."))

    def timer(params: dict[str, Any]) -> dict[str, Any]:
        return {"hunks": [{"index": h["index"], "decision": "accept"} for h in params["hunks"]]}

    editor, proposals, _ = await reviewing(start, home, timer, review={"alwaysAsk": ["secrets/**"]})
    await prompt(editor)

    assert not target.exists()
    [proposal] = proposals
    assert proposal["path"] == str(target) and proposal["alwaysAsk"] is True
    assert "the file is unchanged" in told(home)


async def test_a_client_that_opted_in_but_cannot_review_gets_no_write(
    start: Start, home: Home
) -> None:
    target = app_edited(home, NEW)
    editor = await start({}, server=([*LOOPD, "lsp"], home.env()), loopd={**OPT_IN, "review": True})
    editor.answers += ["allow_once"] * 2
    await prompt(editor)

    assert target.read_text() == OLD
    assert "cannot review edits; nothing was written" in told(home)


async def test_an_open_document_gets_only_the_accepted_hunk_through_apply_edit(
    start: Start, home: Home
) -> None:
    target = app_edited(home, NEW + "# draft\n")
    editor, proposals, settled = await reviewing(start, home, by_person("reject", "accept"))
    uri = editor.open(target, OLD + "# draft\n")  # unsaved
    await prompt(editor)

    assert proposals[0]["oldText"] == OLD + "# draft\n"  # the buffer, not the disk
    assert editor.buffers[uri][1] == "a = 1\nkeep = True\nb = 20\n# draft\n"
    assert target.read_text() == OLD  # the editor saves it, on `settled`
    await until(lambda: settled)
    assert settled[0]["uri"] == uri and settled[0]["written"] is True


async def test_a_secret_is_proposed_whole_without_its_old_text_and_always_asks(
    start: Start, home: Home
) -> None:
    secret = home.root / ".env"
    secret.write_text("TOKEN=old-secret\n")
    home.fake.script("*", call("write", path=".env", content="TOKEN=new\n"), Reply(text="Ok."))
    editor, proposals, _ = await reviewing(start, home, by_person("accept"))
    await prompt(editor)

    [proposal] = proposals
    assert proposal["oldText"] is None and proposal["oldUnread"] is True
    assert proposal["alwaysAsk"] is True
    assert "old-secret" not in json.dumps(proposal)
    assert secret.read_text() == "TOKEN=new\n"  # a person accepted it


async def test_a_file_changed_during_its_review_is_not_overwritten(
    start: Start, home: Home
) -> None:
    target = app_edited(home, NEW)

    def typed_meanwhile(params: dict[str, Any]) -> dict[str, Any]:
        target.write_text(OLD + "mine = 1\n")  # the person saved a change of their own
        return by_person("accept", "accept")(params)

    editor, _, settled = await reviewing(start, home, typed_meanwhile)
    await prompt(editor)

    assert target.read_text() == OLD + "mine = 1\n"
    assert "changed while this edit was being reviewed, so nothing was written" in told(home)
    await until(lambda: settled)
    assert settled[0]["written"] is False
