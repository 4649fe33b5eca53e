"""The verification seal through the real `loopd lsp` (the shipped app, native engine,
real tools and criteria, the fake model): the prompt's answer, `loopd.status`, the
progress end message and the `loopd/session/update` stream."""

from __future__ import annotations

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, home
from tests.e2e.conftest import LOOPD, trusted_config
from tests.e2e.lsp.conftest import Start, start, until

__all__ = ["home", "start"]

pytestmark = pytest.mark.e2e


def write(path: str, content: str) -> Reply:
    return Reply(tool_calls=(ScriptedCall("write", {"path": path, "content": content}),))


async def test_an_incomplete_turn_shows_everywhere_the_lsp_reaches(
    start: Start, home: Home
) -> None:
    home.fake.script(
        "*",
        write("app.txt", "bad\n"),
        Reply(text="Done."),
        write("tests/test_app.py", "def test(): pass\n"),
        Reply(text="Done, really."),
    )
    editor = await start({}, server=([*LOOPD, "lsp"], home.env()))
    trusted_config(editor.home, home.env())
    editor.answers += ["allow_once", "allow_once"]
    sid = await editor.new_session()
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "make it good"}]}
    done = await editor.request("loopd/session/prompt", prompt)

    seal = done["_meta"]["loopd"]["verification"]
    assert done["stopReason"] == "end_turn"
    assert seal["incomplete"] and seal["unmet"] == ["content"]
    assert seal["protectedWrites"] == ["tests/test_app.py"]
    status = await editor.command("loopd.status")
    assert status["verification"] == seal
    assert status["turns"][-1]["verification"] == seal
    await until(lambda: editor.progress_ends())
    assert "verification incomplete: unmet content" in (editor.progress_ends()[-1] or "")
    streamed = [
        u["update"]["_meta"]["loopd"]["verification"]
        for u in editor.updates
        if u["update"]["sessionUpdate"] == "session_info_update" and "_meta" in u["update"]
    ]
    assert streamed == [seal]
    assert "Verification incomplete: unmet content" in editor.texts()
