"""Undo through the whole native stack (`loopd.app`): the real tools record what a
turn changed, and the session puts it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.app import build_app
from loopd.protocol.events import Prompt, TextBlock
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.harness import RecordingLink
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import isolated_env

pytestmark = pytest.mark.e2e


async def test_undo_puts_back_the_last_turns_edits(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    fake_llm.script(
        "*",
        Reply(tool_calls=(ScriptedCall("read", {"path": "a.py"}),)),
        Reply(
            tool_calls=(
                ScriptedCall("edit", {"path": "a.py", "old_string": "1", "new_string": "2"}),
                ScriptedCall("write", {"path": "b.py", "content": "y = 3\n"}),
            )
        ),
        Reply(text="done"),
        Reply(text="noted"),
    )
    app = build_app(isolated_env(tmp_path, fake_llm), str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link, config={"mode": "full_auto"})
        outcome = await app.manager.prompt(view.id, Prompt((TextBlock("change"),)), link)
        assert outcome.stop_reason == "end_turn"
        assert (workspace / "a.py").read_text() == "x = 2\n"

        report = await app.manager.undo(view.id)
        assert set(report.restored) == {str(workspace / "a.py"), str(workspace / "b.py")}
        assert (workspace / "a.py").read_text() == "x = 1\n"
        assert not (workspace / "b.py").exists()
        assert "Restored" in link.updates[-1][1]["content"]["text"]

        await app.manager.prompt(view.id, Prompt((TextBlock("and now?"),)), link)
        told = str(fake_llm.requests[-1].body["messages"])
        assert "The user undid your last changes" in told
    finally:
        await app.aclose()


async def test_the_mode_option_says_how_commands_are_contained(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    from loopd.sandbox.probe import probe_sandbox

    app = build_app(isolated_env(tmp_path, fake_llm), str(workspace))
    try:
        view = await app.manager.new_session(str(workspace), RecordingLink())
        (mode,) = [o for o in view.config_options if o.id == "mode"]
        best = probe_sandbox(env={"PATH": "/usr/bin:/bin"}).best
        expected = f"Commands run in the {best} sandbox" if best != "none" else "No OS sandbox"
        assert mode.description is not None and mode.description.startswith(expected)
    finally:
        await app.aclose()
