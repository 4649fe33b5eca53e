"""A session through `loopd acp --remote` against `loopd serve` on loopback."""

from __future__ import annotations

import asyncio
import json

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, text
from tests.e2e.conftest import anthropic_texts
from tests.e2e.daemon.conftest import loopd
from tests.e2e.lsp.conftest import until
from tests.e2e.remote.conftest import Cuttable, Server, remote_acp, start_server, stop_server
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e

WORDS = " ".join(f"w{i}" for i in range(40))


async def test_a_turn_through_the_bridge_streams_and_ends(home: Home, server: Server) -> None:
    home.fake.script("*", Reply(text="hello from the server"))
    zed = RecordingClient()
    async with remote_acp(home, server, zed) as acp:
        sid = (await acp.new_session(cwd=str(home.work), mcp_servers=[])).session_id
        done = await acp.prompt(session_id=sid, prompt=text("hi"))
        assert done.stop_reason == "end_turn"
        assert zed.text() == "hello from the server"


async def test_a_turn_cut_off_mid_reply_arrives_whole_once_and_in_order(
    home: Home, server: Server
) -> None:
    """The network drops after the reply's first words; the turn runs on on the
    server meanwhile; once the network is back the rest arrives, once, in order, and
    the journal holds exactly what the editor saw."""
    home.fake.script("*", Reply(text=WORDS, pause_after=4, gate="cut"))
    zed = RecordingClient()
    async with Cuttable(server.port) as relay:
        async with remote_acp(home, server, zed, url=server.via(relay.listening)) as acp:
            sid = (await acp.new_session(cwd=str(home.work), mcp_servers=[])).session_id
            prompt = acp.prompt(session_id=sid, prompt=text("count"))
            turn = asyncio.ensure_future(prompt)
            await zed.replying.wait()  # the first words are on the editor's screen
            relay.cut()
            home.fake.release("cut")  # the rest is sent while the editor is away
            await until(lambda: _journaled_end(home, sid), within=60)
            seen_before = zed.text()
            assert WORDS.startswith(seen_before) and seen_before != WORDS
            relay.mend()
            done = await asyncio.wait_for(turn, 60)
        assert done.stop_reason == "end_turn"
        assert zed.text() == WORDS  # the rest once, in order
        assert relay.carried > 2  # the streams were opened again
    assert await journaled_reply(home, sid) == zed.text()


async def journaled_reply(home: Home, sid: str) -> str:
    """The agent's text as the session's journal holds it (`loopd sessions show`)."""
    code, out, _ = await loopd(home, "sessions", "show", sid, "--json")
    assert code == 0
    journal = json.loads(out)["events"]
    chunks = (e for e in journal if e["sessionUpdate"] == "agent_message_chunk")
    return "".join(e["content"]["text"] for e in chunks)


def _journaled_end(home: Home, sid: str) -> bool:
    from loopd.store.sqlite import SqliteStore

    store = SqliteStore(home.root / "data" / "sessions.db")
    try:
        events = store.events(sid)
    finally:
        store.close()
    return any("verification" in json.dumps(e) for e in events)  # the turn's seal, last


async def test_a_restarted_server_is_connected_to_again_and_the_session_goes_on(
    home: Home, server: Server
) -> None:
    """The server restarts between turns: the bridge connects again, loads the session
    without showing its history twice, and the next turn runs with that history."""
    home.fake.script("*", Reply(text="answer one"), Reply(text="answer two"))
    zed = RecordingClient()
    async with (
        Cuttable(server.port) as relay,
        remote_acp(home, server, zed, url=server.via(relay.listening)) as acp,
    ):
        sid = (await acp.new_session(cwd=str(home.work), mcp_servers=[])).session_id
        await acp.prompt(session_id=sid, prompt=text("question one"))
        await stop_server(server)
        relay.cut()
        again = await start_server(home, token=server.token)
        try:
            relay.port = again.port
            relay.mend()
            done = await asyncio.wait_for(
                acp.prompt(session_id=sid, prompt=text("question two")), 120
            )
        finally:
            await stop_server(again)
    assert done.stop_reason == "end_turn"
    assert zed.text() == "answer oneanswer two"  # the history was not shown again
    last = anthropic_texts(home.fake.requests[-1].body)
    assert [t for t in last if t.startswith(("question", "answer"))] == [
        "question one", "answer one", "question two",
    ]  # fmt: skip
