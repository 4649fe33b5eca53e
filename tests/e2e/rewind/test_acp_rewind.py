"""Rewind through a spawned `loopd acp` (raw NDJSON against the fake model): three
turns, the second changing files with bash, then `/rewind 1`: every file is back and
the model's next request has the first turn's context; then redo. And the
`_loopd/session/checkpoints|restore` extension methods, advertised under `_meta`."""

from __future__ import annotations

from typing import Any

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, RawAgent, home, prompt_params, raw_loopd, update_of
from tests.e2e.conftest import anthropic_texts
from tests.e2e.rewind.test_session_rewind import THREE_TURNS, files

__all__ = ["home"]  # the fixture
pytestmark = pytest.mark.e2e

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def say(agent: RawAgent, sid: str, text: str) -> list[dict[str, Any]]:
    """Prompt, answering every permission request with allow; the updates shown."""
    response, seen = await agent.request("session/prompt", prompt_params(sid, text), ALLOW)
    assert response["result"]["stopReason"] == "end_turn", response
    return [update_of(m) for m in seen if update_of(m)]


def said(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["content"].get("text", "") for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


async def test_rewind_over_acp_puts_back_files_and_context_then_redoes(home: Home) -> None:
    work = home.work
    (work / "a.txt").write_text("original\n")
    (work / "keep.txt").write_text("kept\n")
    before = files(work)
    home.fake.script("*", *THREE_TURNS, Reply(text="from the start"), Reply(text="again"))
    async with raw_loopd(home) as agent:
        response, _ = await agent.request("initialize", {"protocolVersion": 1})
        meta = response["result"]["agentCapabilities"]["_meta"]["loopd"]
        assert meta["checkpoints"] == "_loopd/session/checkpoints"
        assert meta["restore"] == "_loopd/session/restore"
        new, _ = await agent.request("session/new", {"cwd": str(work), "mcpServers": []})
        sid = new["result"]["sessionId"]
        commands = await agent.until(
            lambda m: update_of(m).get("sessionUpdate") == "available_commands_update"
        )
        assert "rewind" in {c["name"] for c in update_of(commands)["availableCommands"]}
        for text in ("one", "two", "three"):
            await say(agent, sid, text)
        after = files(work)
        assert after["b.txt"] == "bash\n" and "keep.txt" not in after

        listed = said(await say(agent, sid, "/rewind"))
        assert "1. before “one”" in listed and "3. before “three”" in listed
        assert said(await say(agent, sid, "/rewind 1")).startswith("Restored the code and")
        assert files(work) == before

        await say(agent, sid, "fresh")
        assert anthropic_texts(home.fake.requests[-1].body) == ["fresh"]

        assert said(await say(agent, sid, "/rewind redo")).startswith("Restored")
        assert files(work) == after
        await say(agent, sid, "and now")
        sent = anthropic_texts(home.fake.requests[-1].body)
        assert sent[0] == "one" and "three" in sent and "fresh" not in sent
        assert sent[-1] == "and now"


async def test_the_extension_methods_list_restore_and_refuse_outside_changes(
    home: Home,
) -> None:
    work = home.work
    (work / "a.txt").write_text("original\n")
    (work / "keep.txt").write_text("kept\n")
    home.fake.script("*", *THREE_TURNS[:4])
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(work)
        await say(agent, sid, "one")
        (work / "mine.txt").write_text("the person's own\n")  # between the turns
        await say(agent, sid, "two")
        listed, _ = await agent.request("_loopd/session/checkpoints", {"sessionId": sid})
        points = listed["result"]["checkpoints"]
        assert [(p["prompt"], p["label"]) for p in points] == [(1, "one"), (2, "two")]
        assert listed["result"]["redo"] is False

        restore = {"sessionId": sid, "prompt": 1, "scope": "code"}
        refused, _ = await agent.request("_loopd/session/restore", restore)
        assert refused["result"]["restored"] is False
        assert refused["result"]["changedOutside"] == [str(work / "mine.txt")]
        assert (work / "b.txt").exists()  # nothing was changed

        forced, _ = await agent.request("_loopd/session/restore", {**restore, "force": True})
        assert forced["result"]["restored"] is True
        assert not (work / "mine.txt").exists() and not (work / "b.txt").exists()
        assert (work / "keep.txt").read_text() == "kept\n"

        bad, _ = await agent.request("_loopd/session/restore", {"sessionId": sid, "prompt": 9})
        assert bad["error"]["code"] == -32602
        assert "no checkpoint before prompt 9" in bad["error"]["data"]["details"]
        redo, _ = await agent.request("_loopd/session/restore", {"sessionId": sid, "redo": True})
        assert redo["result"]["restored"] is True
        assert files(work)["mine.txt"] == "the person's own\n"


async def test_session_fork_from_before_a_prompt(home: Home) -> None:
    """`session/fork` with `_meta.loopd.beforePrompt`: the fork's model context is the
    one before that prompt; the first session keeps its own."""
    work = home.work
    (work / "a.txt").write_text("original\n")
    (work / "keep.txt").write_text("kept\n")
    home.fake.script("*", *THREE_TURNS[:4], Reply(text="in the fork"), Reply(text="in the first"))
    async with raw_loopd(home) as agent:
        response, _ = await agent.request("initialize", {"protocolVersion": 1})
        assert response["result"]["agentCapabilities"]["_meta"]["loopd"]["forkBeforePrompt"]
        new, _ = await agent.request("session/new", {"cwd": str(work), "mcpServers": []})
        sid = new["result"]["sessionId"]
        await say(agent, sid, "one")
        await say(agent, sid, "two")
        fork_params = {"sessionId": sid, "cwd": str(work), "mcpServers": []}
        at = {**fork_params, "_meta": {"loopd": {"beforePrompt": 2}}}
        fork, _ = await agent.request("session/fork", at)
        forked = fork["result"]["sessionId"]
        assert forked != sid
        await say(agent, forked, "from the fork")
        sent = anthropic_texts(home.fake.requests[-1].body)
        assert sent[0] == "one" and "two" not in sent and sent[-1] == "from the fork"
        await say(agent, sid, "from the first")
        sent = anthropic_texts(home.fake.requests[-1].body)
        assert "two" in sent and "from the fork" not in sent

        bad = {**fork_params, "_meta": {"loopd": {"beforePrompt": "two"}}}
        refused, _ = await agent.request("session/fork", bad)
        assert refused["error"]["code"] == -32602


async def test_rewind_asks_before_overwriting_what_the_person_changed(home: Home) -> None:
    """`/rewind` over a file the person changed between turns: a permission request
    names it; rejected, nothing changes; allowed, the restore goes ahead."""
    work = home.work
    (work / "a.txt").write_text("original\n")
    (work / "keep.txt").write_text("kept\n")
    home.fake.script("*", *THREE_TURNS[:4])
    reject = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(work)
        await say(agent, sid, "one")
        (work / "mine.txt").write_text("the person's own\n")
        await say(agent, sid, "two")

        response, seen = await agent.request(
            "session/prompt", prompt_params(sid, "/rewind 1"), reject
        )
        assert response["result"]["stopReason"] == "end_turn"
        (asked,) = [m for m in seen if m.get("method") == "session/request_permission"]
        assert asked["params"]["toolCall"]["locations"] == [{"path": str(work / "mine.txt")}]
        shown = [update_of(m) for m in seen if update_of(m)]
        assert said(shown).startswith("Nothing was restored")
        assert files(work)["mine.txt"] == "the person's own\n" and "b.txt" in files(work)

        updates = await say(agent, sid, "/rewind 1")  # allowed this time
        assert said(updates).startswith("Restored the code and the conversation")
        assert "mine.txt" not in files(work) and "b.txt" not in files(work)
        assert files(work)["keep.txt"] == "kept\n"
