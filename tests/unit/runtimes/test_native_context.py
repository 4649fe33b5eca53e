"""A native session kept inside a small window, over real HTTP to the fake model: the
window learned from the overflow error, kept in the store for the next process,
compaction that keeps tool calls with their results, and the transcript whole."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.messages import TextPart
from loopd.protocol.model import Usage
from loopd.providers.factory import make_provider
from loopd.testing import llm_script
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager
from loopd.testing.long_session import LongSession, pairs_intact, request_tokens

WINDOW = 20_000


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


SESSIONS = {
    "40-turns": (LongSession(), 40),
    # Twenty reads in a turn, some 2,300 tokens said beside each: the compaction
    # inside the turn (one segment) leaves it high. Judged without the output it
    # reserves, and only once armed again, the next steps grew into more overflows
    # (the main of the time); judged as sent, a step that would not fit compacts first.
    "2-turns-of-20-reads": (LongSession(reply_words=200, reads=20, talk_words=1_300), 2),
}


@pytest.mark.parametrize("kind", ["anthropic", "openai_chat"])
@pytest.mark.parametrize("name", list(SESSIONS))
async def test_a_long_session_in_a_small_window_keeps_working(
    tmp_path: Path, kind: str, name: str
) -> None:
    session, turns = SESSIONS[name]
    session = replace(session)  # its counts are this test's own
    with FakeLLMServer(window=WINDOW, responder=session.respond) as fake:
        base = fake.base_url if kind == "anthropic" else fake.openai_base_url
        provider = make_provider(kind, base_url=base, api_key="k")  # type: ignore[arg-type]
        manager = scripted_manager(tmp_path, provider)
        link = RecordingLink()
        view = await manager.new_session(str(tmp_path), link)
        stops = [
            (await manager.prompt(view.id, ask(f"explain module {n}"), link)).stop_reason
            for n in range(turns)
        ]
        await manager.shutdown()
        await provider.aclose()
        sent = fake.requests

    over = [i for i, r in enumerate(sent) if request_tokens(r) > WINDOW]
    assert over, "the session never reached the window, so it tested nothing"
    assert over == [over[0]], "after the first overflow, every request fits the learned window"
    after = sent[over[0] + 1 :]
    assert max(request_tokens(r) + r.body["max_tokens"] for r in after) <= WINDOW
    assert stops == ["end_turn"] * turns
    assert session.summaries >= 3
    assert all(pairs_intact(r.body) for r in sent)
    assert manager.store.learned_window("native/scripted") == WINDOW

    notes = [
        u["content"]["text"]
        for _, u in link.updates
        if u["sessionUpdate"] == "agent_message_chunk"
        and "Context compacted" in u["content"]["text"]
    ]
    assert len(notes) >= 3
    usage = [u for _, u in link.updates if u["sessionUpdate"] == "usage_update"]
    assert usage[-1]["size"] == WINDOW and 0 < usage[-1]["used"] <= WINDOW
    prompts = [m.parts[0] for m in manager.store.messages(view.id) if m.role == "user"]
    assert [p.text for p in prompts if isinstance(p, TextPart) and "explain" in p.text] == [
        f"explain module {n}" for n in range(turns)
    ]


async def test_a_restarted_process_knows_the_learned_window(tmp_path: Path) -> None:
    session = LongSession(reply_words=2_400)
    with FakeLLMServer(window=WINDOW, responder=session.respond) as fake:
        provider = make_provider("anthropic", base_url=fake.base_url, api_key="k")
        first = scripted_manager(tmp_path, provider)
        link = RecordingLink()
        view = await first.new_session(str(tmp_path), link)
        for n in range(6):
            await first.prompt(view.id, ask(f"explain module {n}"), link)
        await first.shutdown()
        overflowed = sum(request_tokens(r) > WINDOW for r in fake.requests)
        assert overflowed == 1

        later = scripted_manager(tmp_path, provider)
        relink = RecordingLink()
        await later.load_session(view.id, relink)
        replayed = len(relink.updates)
        before = len(fake.requests)
        for n in range(6):
            outcome = await later.prompt(view.id, ask(f"explain module {n + 6}"), relink)
            assert outcome.stop_reason == "end_turn"
        await later.shutdown()
        await provider.aclose()
        after = fake.requests[before:]

    assert all(request_tokens(r) <= WINDOW for r in after)
    usage = [u for _, u in relink.updates[replayed:] if u["sessionUpdate"] == "usage_update"]
    assert usage and {u["size"] for u in usage} == {WINDOW}


async def test_the_cost_is_the_sessions_running_total_across_a_restart(tmp_path: Path) -> None:
    million = Usage(input_tokens=1_000_000, output_tokens=0)
    provider = ScriptedProvider.of(*[Reply(text="ok", usage=million) for _ in range(3)])
    manager = scripted_manager(tmp_path, provider, models=("claude-sonnet-4-5",))
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    await manager.prompt(view.id, ask("one"), link)
    await manager.prompt(view.id, ask("two"), link)
    await manager.shutdown()
    reopened = scripted_manager(tmp_path, provider, models=("claude-sonnet-4-5",))
    relink = RecordingLink()
    await reopened.load_session(view.id, relink)
    await reopened.prompt(view.id, ask("three"), relink)

    costs = [u["cost"] for _, u in (*link.updates, *relink.updates) if "cost" in u]
    assert [c["amount"] for c in costs][-3:] == pytest.approx([3.0, 6.0, 9.0])
    assert {c["currency"] for c in costs} == {"USD"}
    sizes = {u["size"] for _, u in relink.updates if u["sessionUpdate"] == "usage_update"}
    assert sizes == {200_000}


async def test_a_fork_keeps_the_compacted_view_and_in_the_same_folder_the_prompt(
    tmp_path: Path,
) -> None:
    replies = ["one", "the summary", "in the parent", "in the fork", "elsewhere"]
    provider = ScriptedProvider.of(*[Reply(text=t) for t in replies])
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    await manager.prompt(view.id, ask("first"), link)
    await manager.prompt(view.id, ask("/compact"), link)
    await manager.prompt(view.id, ask("parent goes on"), link)
    same = await manager.fork_session(view.id, str(tmp_path), link)
    await manager.prompt(same.id, ask("fork goes on"), link)
    other = tmp_path / "other"
    other.mkdir()
    moved = await manager.fork_session(view.id, str(other), link)
    await manager.prompt(moved.id, ask("somewhere else"), link)

    parent, fork, elsewhere = provider.requests[2:]
    assert fork.system == parent.system
    after = [m.text for m in fork.messages][2:]
    assert after == ["parent goes on", "in the parent", "fork goes on"]
    assert "the summary" in fork.messages[0].text and "the summary" in elsewhere.messages[0].text
    assert str(other) in elsewhere.system and elsewhere.system != parent.system


@pytest.mark.parametrize("kind", ["anthropic", "openai_chat"])
async def test_a_small_window_that_holds_the_output_too_answers_a_short_prompt(
    tmp_path: Path, kind: str
) -> None:
    """A 10k-window model whose server counts `max_tokens` against the window (as
    OpenAI's, vLLM's and Anthropic's do), met for the first time with a 2k prompt:
    the overflow teaches the window, and the same step is asked again with the output
    reserved within it (nothing to compact, and nothing needs to be)."""
    with FakeLLMServer(window=10_000, holds_output=True) as fake:
        fake.script("*", llm_script.Reply(text="a short answer"))
        base = fake.base_url if kind == "anthropic" else fake.openai_base_url
        provider = make_provider(kind, base_url=base, api_key="k")  # type: ignore[arg-type]
        manager = scripted_manager(tmp_path, provider)
        link = RecordingLink()
        view = await manager.new_session(str(tmp_path), link)
        outcome = await manager.prompt(view.id, ask("explain this: " + "x " * 4_000), link)
        await manager.shutdown()
        await provider.aclose()
        sent = fake.requests

    assert outcome.stop_reason == "end_turn"
    first, second = sent
    assert request_tokens(first) + first.body["max_tokens"] > 10_000  # 8192 asked for
    assert request_tokens(second) + second.body["max_tokens"] <= 10_000
    assert manager.store.learned_window("native/scripted") == 10_000
