"""`loopd lsp` and another loopd process (here: a session manager in the test
process) on one store: a session live in the other is refused by the editor's
server with a message naming it, and loads once the other has closed it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopd.protocol.events import Prompt, TextBlock
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager
from tests.e2e.lsp.conftest import Start

pytestmark = pytest.mark.e2e


async def test_a_session_live_in_another_process_is_refused(tmp_path: Path, start: Start) -> None:
    other = scripted_manager(tmp_path, ScriptedProvider.of(Reply(text="from zed")))
    link = RecordingLink()
    view = await other.new_session(str(tmp_path), link)
    await other.prompt(view.id, Prompt((TextBlock("hi from acp"),)), link)

    editor = await start({"replies": [{"text": "and from lsp"}]})
    params = {"sessionId": view.id, "cwd": str(tmp_path), "mcpServers": []}
    held = rf"session {view.id} is open in another loopd process \(pid {os.getpid()} on "
    with pytest.raises(Exception, match=held):
        await editor.request("loopd/session/load", params)
    assert editor.updates == []  # nothing replayed from a session it may not write

    await other.shutdown()
    await editor.request("loopd/session/load", params)
    assert editor.texts() == "from zed"
