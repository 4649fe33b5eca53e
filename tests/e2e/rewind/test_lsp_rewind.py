"""Rewind through the real `loopd lsp` (the shipped app, the fake model): three
turns, the second with a bash change, then `loopd/session/restore` to before the
first: every file is back and the model's next request has the first turn's
context; then redo."""

from __future__ import annotations

from typing import Any

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, home
from tests.e2e.conftest import LOOPD, anthropic_texts
from tests.e2e.lsp.conftest import Editor, Start, start
from tests.e2e.rewind.test_session_rewind import THREE_TURNS, files

__all__ = ["home", "start"]

pytestmark = pytest.mark.e2e


async def prompt(editor: Editor, sid: str, text: str) -> None:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    done = await editor.request("loopd/session/prompt", params)
    assert done["stopReason"] == "end_turn"


async def test_restore_and_redo_over_the_lsp_extension(start: Start, home: Home) -> None:
    work = home.work
    (work / "a.txt").write_text("original\n")
    (work / "keep.txt").write_text("kept\n")
    before = files(work)
    home.fake.script("*", *THREE_TURNS, Reply(text="from the start"))
    editor = await start({}, server=([*LOOPD, "lsp"], home.env()))
    assert editor.server is not None
    requests = editor.server.capabilities.experimental["loopd"]["requests"]
    assert {"loopd/session/checkpoints", "loopd/session/restore"} <= set(requests)
    new: dict[str, Any] = await editor.request(
        "loopd/session/new", {"cwd": str(work), "mcpServers": []}
    )
    sid = new["sessionId"]
    mode = {"sessionId": sid, "configId": "mode", "value": "full_auto"}
    await editor.request("loopd/session/setConfigOption", mode)
    for text in ("one", "two", "three"):
        await prompt(editor, sid, text)
    after = files(work)
    assert after["b.txt"] == "bash\n"

    listed = await editor.request("loopd/session/checkpoints", {"sessionId": sid})
    assert [p["prompt"] for p in listed["checkpoints"]] == [1, 2, 3]
    restored = await editor.request("loopd/session/restore", {"sessionId": sid, "prompt": 1})
    assert restored["restored"] is True and files(work) == before
    assert "Restored the code and the conversation" in editor.texts()

    await prompt(editor, sid, "fresh")
    assert anthropic_texts(home.fake.requests[-1].body) == ["fresh"]

    redo = await editor.request("loopd/session/restore", {"sessionId": sid, "redo": True})
    assert redo["restored"] is True and files(work) == after


async def test_fork_before_a_prompt_over_the_lsp_extension(start: Start, home: Home) -> None:
    """`loopd/session/fork` with `beforePrompt`: a new session, open on this
    connection, whose conversation is the one before that prompt; a bad number is
    invalid params and the source session goes on."""
    home.fake.script("*", *THREE_TURNS, Reply(text="in the fork"))
    editor = await start({}, server=([*LOOPD, "lsp"], home.env()))
    assert editor.server is not None
    assert "loopd/session/fork" in editor.server.capabilities.experimental["loopd"]["requests"]
    new: dict[str, Any] = await editor.request(
        "loopd/session/new", {"cwd": str(home.work), "mcpServers": []}
    )
    sid = new["sessionId"]
    mode = {"sessionId": sid, "configId": "mode", "value": "full_auto"}
    await editor.request("loopd/session/setConfigOption", mode)
    for text in ("one", "two", "three"):
        await prompt(editor, sid, text)

    fork_params = {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
    for bad in (True, "2"):
        with pytest.raises(Exception, match="beforePrompt"):
            await editor.request("loopd/session/fork", {**fork_params, "beforePrompt": bad})
    with pytest.raises(Exception, match="no checkpoint before prompt 9"):
        await editor.request("loopd/session/fork", {**fork_params, "beforePrompt": 9})

    fork = await editor.request("loopd/session/fork", {**fork_params, "beforePrompt": 2})
    assert fork["sessionId"] != sid and fork["configOptions"]
    await prompt(editor, fork["sessionId"], "forked")
    texts = anthropic_texts(home.fake.requests[-1].body)
    assert texts[0] == "one" and texts[-1] == "forked"
    assert "two" not in texts and "three" not in texts
    listed = await editor.request("loopd/session/checkpoints", {"sessionId": sid})
    assert [p["prompt"] for p in listed["checkpoints"]] == [1, 2, 3], "the source is as it was"
