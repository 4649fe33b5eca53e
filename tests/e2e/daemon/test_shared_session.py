"""One session live in two editors at once, through one daemon: Zed's `loopd acp`
and Neovim's `loopd lsp` (both forwarders). A turn started in one streams to the
other, the other continues it, and each turn's model context holds the others."""

from __future__ import annotations

import pytest
from acp.schema import ClientCapabilities

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, loopd_acp, text
from tests.e2e.conftest import anthropic_texts
from tests.e2e.daemon.conftest import LOOPD, shared, status
from tests.e2e.lsp.conftest import Start, until
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e
EDIT = {"path": "a.py", "old_string": "1", "new_string": "2"}


async def test_a_turn_from_zed_streams_to_neovim_which_continues_it(
    daemon_home: Home, start: Start
) -> None:
    home = daemon_home
    home.fake.script(
        "*", Reply(text="answer one"), Reply(text="answer two"), Reply(text="answer three")
    )
    zed = RecordingClient()
    async with loopd_acp(home, zed, ClientCapabilities(), {"LOOPD_DAEMON": "on"}) as acp:
        sid = (await acp.new_session(cwd=str(home.work), mcp_servers=[])).session_id
        await acp.prompt(session_id=sid, prompt=text("question one"))

        neovim = await start({}, server=([*LOOPD, "lsp"], shared(home)))
        params = {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
        await neovim.request("loopd/session/load", params)
        assert neovim.texts() == "answer one"  # the history, replayed
        running = await status(home)
        assert running["connections"] == 2 and running["sessions"] == [sid]

        neovim.updates.clear()
        await acp.prompt(session_id=sid, prompt=text("question two"))
        await until(lambda: neovim.texts() == "answer two")  # Zed's turn, live in Neovim
        assert neovim.texts("user_message_chunk") == "question two"

        zed.updates.clear()
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "question three"}]}
        done = await neovim.request("loopd/session/prompt", prompt)
        assert done["stopReason"] == "end_turn"
        await until(lambda: zed.text() == "answer three")  # Neovim's turn, live in Zed
        assert zed.text("user_message_chunk") == "question three"

        last = anthropic_texts(home.fake.requests[-1].body)
        assert [t for t in last if t.startswith(("question", "answer"))] == [
            "question one", "answer one", "question two", "answer two", "question three",
        ]  # fmt: skip

        # An approval goes to the editor whose prompt runs, never to the other one.
        (home.work / "a.py").write_text("1\n")
        home.fake.script(
            "*",
            Reply(tool_calls=(ScriptedCall("read", {"path": "a.py"}, id="r1"),)),
            Reply(tool_calls=(ScriptedCall("edit", EDIT, id="e1"),)),
            Reply(text="edited"),
        )
        neovim.answers.append("allow_once")
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "edit a.py"}]}
        assert (await neovim.request("loopd/session/prompt", prompt))["stopReason"] == "end_turn"
        assert [r["toolCall"]["toolCallId"] for r in neovim.permission_requests] == ["e1"]
        assert zed.permissions == []
        assert (home.work / "a.py").read_text() == "2\n"
        await until(lambda: zed.text().endswith("edited"))  # Zed watched it happen
        assert "e1" in {u.get("toolCallId") for _, u in zed.updates}


async def test_each_editor_s_sessions_use_its_own_credentials(daemon_home: Home) -> None:
    """Two editors with different keys and endpoints on one daemon: each session's
    requests carry its own editor's key to its own endpoint, never the other's."""
    from loopd.testing.fake_llm import FakeLLMServer

    home = daemon_home
    home.fake.script("*", Reply(text="from the first endpoint"))
    with FakeLLMServer() as other:
        other.script("*", Reply(text="from the second endpoint"))
        first, second = RecordingClient(), RecordingClient()
        keyed = {"LOOPD_DAEMON": "on", "ANTHROPIC_API_KEY": "key-one"}
        async with loopd_acp(home, first, env=keyed) as one:
            theirs = {
                "LOOPD_DAEMON": "on", "ANTHROPIC_API_KEY": "key-two",
                "ANTHROPIC_BASE_URL": other.base_url,
            }  # fmt: skip
            async with loopd_acp(home, second, env=theirs) as two:
                assert (await status(home))["connections"] == 2
                a = (await one.new_session(cwd=str(home.work), mcp_servers=[])).session_id
                b = (await two.new_session(cwd=str(home.work), mcp_servers=[])).session_id
                await one.prompt(session_id=a, prompt=text("hi"))
                await two.prompt(session_id=b, prompt=text("hi"))
        assert first.text() == "from the first endpoint"
        assert second.text() == "from the second endpoint"
        assert {r.headers.get("x-api-key") for r in home.fake.requests} == {"key-one"}
        assert {r.headers.get("x-api-key") for r in other.requests} == {"key-two"}
