"""Under load, one daemon loses and reorders nothing: three editors (two `loopd acp`,
one `loopd lsp`) with two sessions each, all six turns streaming long replies at
once, one session also attached to a second editor. Every editor attached to a
session gets that session's reply whole and in order, and the journal holds
exactly what each editor was sent. (Speed under load: `benchmarks/load.py`.)"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, RawAgent, prompt_params, raw_loopd
from tests.e2e.daemon.conftest import LOOPD, shared
from tests.e2e.lsp.conftest import Start

pytestmark = pytest.mark.e2e
WORDS = 600
REPLIES = [" ".join(f"r{k}w{i}" for i in range(WORDS)) for k in range(6)]


def chunks(updates: list[dict[str, Any]], sid: str) -> list[str]:
    return [
        u["update"]["content"]["text"]
        for u in updates
        if u["sessionId"] == sid and u["update"]["sessionUpdate"] == "agent_message_chunk"
    ]


async def turns(agent: RawAgent, sids: list[str], seen: list[dict[str, Any]]) -> None:
    """Prompt every session of `agent` at once; read until every turn has ended,
    keeping the updates in `seen` as they came."""
    first = agent.next_id + 1
    for sid in sids:
        agent.next_id += 1
        await agent.send({"id": agent.next_id, "method": "session/prompt",
                          "params": prompt_params(sid, "go")})  # fmt: skip
    waiting = set(range(first, agent.next_id + 1))
    while waiting:
        message = await agent.recv()
        if message.get("method") == "session/update":
            seen.append(message["params"])
        elif "method" not in message:
            assert "result" in message, message
            waiting.discard(message["id"])


def journal(home: Home, sid: str) -> list[str]:
    from loopd.store.sqlite import SqliteStore

    store = SqliteStore(home.root / "data" / "sessions.db")
    try:
        return [e["content"]["text"] for e in store.events(sid)
                if e.get("sessionUpdate") == "agent_message_chunk"]  # fmt: skip
    finally:
        store.close()


async def test_six_turns_streaming_at_once_lose_and_reorder_nothing(
    daemon_home: Home, start: Start
) -> None:
    home = daemon_home
    # Written 5 bytes at a time: each reply reaches the editors as a dozen updates or
    # more, interleaved with the other turns' (written whole, loopd sends one or two).
    home.fake.script("*", *(Reply(text=text, chunk=5) for text in REPLIES))
    new = {"cwd": str(home.work), "mcpServers": []}
    async with contextlib.AsyncExitStack() as editors:
        acp: list[tuple[RawAgent, list[str]]] = []
        for _ in range(2):  # one after the other: the first starts the daemon
            agent = await editors.enter_async_context(raw_loopd(home, shared(home)))
            await agent.request("initialize", {"protocolVersion": 1})
            sids = [(await agent.request("session/new", new))[0]["result"]["sessionId"]
                    for _ in range(2)]  # fmt: skip
            acp.append((agent, sids))
        neovim = await start({}, server=([*LOOPD, "lsp"], shared(home)))
        lsp = [(await neovim.request("loopd/session/new", new))["sessionId"] for _ in range(2)]
        watched = acp[0][1][0]  # Zed's first session, live in Neovim too
        await neovim.request("loopd/session/load", {"sessionId": watched, **new})

        seen: dict[str, list[dict[str, Any]]] = {"zed": [], "other": []}
        lsp_prompt = [{"type": "text", "text": "go"}]
        await asyncio.gather(
            turns(*acp[0], seen["zed"]),
            turns(*acp[1], seen["other"]),
            *(neovim.request("loopd/session/prompt", {"sessionId": s, "prompt": lsp_prompt})
              for s in lsp),
        )  # fmt: skip

    received = {sid: chunks(seen["zed"], sid) for sid in acp[0][1]}
    received |= {sid: chunks(seen["other"], sid) for sid in acp[1][1]}
    received |= {sid: chunks(neovim.updates, sid) for sid in lsp}
    texts = {sid: "".join(parts) for sid, parts in received.items()}
    assert sorted(texts.values()) == sorted(REPLIES)  # each whole, in order, in its session
    assert "".join(chunks(neovim.updates, watched)) == texts[watched]  # the second editor too
    for sid, parts in received.items():
        assert journal(home, sid) == parts  # the journal holds what the editor was sent
