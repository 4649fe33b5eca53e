"""Two editors on one session, each through its own `loopd acp --remote`: a turn
either starts streams live to the other, approvals go to the one that prompted."""

from __future__ import annotations

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, text
from tests.e2e.daemon.conftest import loopd
from tests.e2e.lsp.conftest import until
from tests.e2e.remote.conftest import Server, remote_acp
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e
EDIT = {"path": "a.py", "old_string": "1", "new_string": "2"}


def read_then_edit(then: str) -> tuple[Reply, ...]:
    """The model reads a.py, edits it (`e1`: asked of the editor), then says `then`."""
    return (
        Reply(tool_calls=(ScriptedCall("read", {"path": "a.py"}, id="r1"),)),
        Reply(tool_calls=(ScriptedCall("edit", EDIT, id="e1"),)),
        Reply(text=then),
    )


async def test_two_remote_editors_see_each_other_s_turns_live(home: Home, server: Server) -> None:
    home.fake.script("*", Reply(text="answer one"), Reply(text="answer two"))
    laptop, tablet = RecordingClient(), RecordingClient()
    async with remote_acp(home, server, laptop) as one, remote_acp(home, server, tablet) as two:
        sid = (await one.new_session(cwd=str(home.work), mcp_servers=[])).session_id
        await two.load_session(session_id=sid, cwd=str(home.work), mcp_servers=[])

        await one.prompt(session_id=sid, prompt=text("question one"))
        await until(lambda: tablet.text() == "answer one", within=30)  # live on the other
        assert tablet.text("user_message_chunk") == "question one"

        laptop.updates.clear()
        done = await two.prompt(session_id=sid, prompt=text("question two"))
        assert done.stop_reason == "end_turn"
        await until(lambda: laptop.text() == "answer two", within=30)
        assert laptop.text("user_message_chunk") == "question two"

        _, out, _ = await loopd(home, "doctor")  # on the server: what it serves, to whom
        assert f"remote: {server.url}" in out
        assert f"roots: {home.work}" in out and server.fingerprint in out
        assert "clients: 2" in out
        assert out.count("127.0.0.1:") >= 2 and out.count(sid) == 2
        assert server.token not in out


async def test_the_approval_is_asked_of_the_editor_that_prompted_and_runs_on_the_server(
    home: Home, server: Server
) -> None:
    (home.work / "a.py").write_text("1\n")
    home.fake.script("*", *read_then_edit("edited"))
    laptop, tablet = RecordingClient(answers=["allow_once"]), RecordingClient()
    async with remote_acp(home, server, laptop) as one, remote_acp(home, server, tablet) as two:
        sid = (await one.new_session(cwd=str(home.work), mcp_servers=[])).session_id
        await two.load_session(session_id=sid, cwd=str(home.work), mcp_servers=[])
        done = await one.prompt(session_id=sid, prompt=text("edit a.py"))
        assert done.stop_reason == "end_turn"
        assert [p[0].tool_call_id for p in laptop.permissions] == ["e1"]
        assert tablet.permissions == []
        assert (home.work / "a.py").read_text() == "2\n"  # the server's file
        await until(lambda: tablet.text().endswith("edited"), within=30)
