"""The long session end to end: the real `loopd acp` (catalog, native engine, real
tools, store) against a fake model whose window is 20k tokens. The window is learned
from the first overflow, the conversation is compacted as it grows, and every turn
ends normally; the editor sees the usage against the learned window and a note at
each compaction. After the first overflow no request exceeds the learned window,
counting the output it reserves: also with replies of 2,400 words (some 4,500
tokens each), and with one turn of twenty reads that grows through the window step
by step, which a threshold judged without the reserve, and only once armed again
after a compaction, let grow into further overflows (four on the main of the time)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.long_session import LongSession, pairs_intact, request_tokens
from tests.e2e.acp.conftest import Home, loopd_acp, text
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e

WINDOW = 20_000


SESSIONS = {
    "40x1500-words": (LongSession(reply_words=1_500), 40),
    "15x2400-words": (LongSession(reply_words=2_400), 15),
    # one turn grows through the window step by step: a compaction inside it leaves
    # it high, and each next step must still be judged as it will be sent
    "2x20-reads": (LongSession(reply_words=200, reads=20, talk_words=1_300), 2),
}


@pytest.fixture(params=list(SESSIONS))
def small(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Home, LongSession, int]]:
    """A home whose model has a 20k window and answers as `LongSession` does."""
    session, turns = SESSIONS[request.param]
    session = replace(session)  # its counts are this test's own
    with FakeLLMServer(window=WINDOW, responder=session.respond) as fake:
        home = Home(tmp_path.resolve(), fake)
        home.work.mkdir()
        (home.work / "module.py").write_text("def f():\n    return 1\n" * 20)
        yield home, session, turns


async def test_a_long_session_in_a_twenty_thousand_token_window(
    small: tuple[Home, LongSession, int],
) -> None:
    home, session, turns = small
    client = RecordingClient()
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        stops = [
            (await conn.prompt(session_id=new.session_id, prompt=text(f"explain {n}"))).stop_reason
            for n in range(turns)
        ]
    sent = home.fake.requests

    over = [i for i, r in enumerate(sent) if request_tokens(r) > WINDOW]
    assert len(over) == 1, "one overflow teaches the window; nothing sent after it exceeds it"
    after = sent[over[0] + 1 :]
    as_sent = [request_tokens(r) + r.body["max_tokens"] for r in after]
    assert max(as_sent) <= WINDOW, "a request and the output it reserves fit the window"
    assert stops == ["end_turn"] * turns
    assert session.summaries >= 3
    assert all(pairs_intact(r.body) for r in sent)
    usage = client.of("usage_update")
    assert usage[-1]["size"] == WINDOW and usage[-1]["used"] <= WINDOW
    notes = [u["content"]["text"] for u in client.of("agent_message_chunk")]
    assert sum("Context compacted" in n for n in notes) >= 3
