"""Fresh files through the whole native stack (`loopd.app`, the real tools and
store): a file changed behind the agent's back is announced with the next message,
and an edit computed from the stale picture is refused until the agent reads again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopd.app import build_app
from loopd.protocol.events import Prompt, TextBlock
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.harness import RecordingLink
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import isolated_env

pytestmark = pytest.mark.e2e

EDIT = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 3"}


async def test_a_changed_file_is_announced_and_a_stale_edit_refused(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    target = workspace / "a.py"
    target.write_text("x = 1\n")
    fake_llm.script(
        "*",
        Reply(tool_calls=(ScriptedCall("read", {"path": "a.py"}),)),
        Reply(text="read it"),
        Reply(tool_calls=(ScriptedCall("edit", EDIT),)),
        Reply(tool_calls=(ScriptedCall("read", {"path": "a.py"}),)),
        Reply(tool_calls=(ScriptedCall("edit", EDIT),)),
        Reply(text="done"),
    )
    app = build_app(isolated_env(tmp_path, fake_llm), str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link, config={"mode": "full_auto"})
        await app.manager.prompt(view.id, Prompt((TextBlock("look at a.py"),)), link)
        target.write_text("x = 1\ny = 2\n")  # the person edits it meanwhile
        outcome = await app.manager.prompt(view.id, Prompt((TextBlock("now change x"),)), link)
    finally:
        await app.aclose()

    assert outcome.stop_reason == "end_turn"
    prompt = json.dumps(fake_llm.requests[2].body["messages"][-1])
    assert "a.py changed since you last read it" in prompt
    refused = json.dumps(fake_llm.requests[3].body["messages"][-1])
    assert "changed since you last read it (on disk or in the editor): read it again" in refused
    assert target.read_text() == "x = 3\ny = 2\n", "the person's line survived"
