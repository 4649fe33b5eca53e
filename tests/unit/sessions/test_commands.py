"""Slash commands the session layer runs itself: `/clear` and `/compact`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from loopd.context.view import ACK, summary_message
from loopd.engine.compactor import SUMMARISER
from loopd.protocol.errors import ProviderError
from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.turns import compacted_note
from loopd.sessions.commands import (
    CLEAR,
    CLEARED_NOTE,
    COMPACT,
    CONTINUE,
    UNDO,
    commands_for,
    slash_command,
)
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


def text_of(link: RecordingLink) -> str:
    return "".join(
        u["content"]["text"] for _, u in link.updates if u["sessionUpdate"] == "agent_message_chunk"
    )


async def test_clear_starts_a_fresh_context_that_survives_a_restart(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(text="one"), Reply(text="two"))
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    assert view.commands == (CLEAR, COMPACT, UNDO, CONTINUE)
    await manager.prompt(view.id, ask("first"), link)
    cleared = await manager.prompt(view.id, ask("/clear"), link)
    await manager.prompt(view.id, ask("second"), link)

    assert cleared.stop_reason == "end_turn"
    assert len(provider.requests) == 2  # /clear never reached the model
    assert [m.text for m in provider.requests[1].messages] == ["second"]
    journal = [e["content"].get("text") for e in manager.store.events(view.id) if "content" in e]
    assert journal == ["first", "one", "/clear", CLEARED_NOTE, "second", "two"]
    await manager.shutdown()

    later = ScriptedProvider.of(Reply(text="three"))
    reopened = scripted_manager(tmp_path, later)
    await reopened.load_session(view.id, RecordingLink())
    await reopened.prompt(view.id, ask("third"), link)
    assert [m.text for m in later.requests[0].messages] == ["second", "two", "third"]


async def test_compact_continues_from_the_models_summary(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(
        Reply(text="one"), Reply(text="the summary"), Reply(text="two"), Reply(text="three")
    )
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    await manager.prompt(view.id, ask("first"), link)
    compacted = await manager.prompt(view.id, ask("/compact"), link)
    await manager.prompt(view.id, ask("second"), link)

    assert compacted.stop_reason == "end_turn"
    summary_request = provider.requests[1]
    assert summary_request.system == SUMMARISER and summary_request.tools == ()
    (asked,) = summary_request.messages
    assert "User: first" in asked.text and "Assistant: one" in asked.text
    after = [m.text for m in provider.requests[2].messages]
    assert after == [summary_message("the summary").text, ACK, "second"]
    assert provider.requests[2].system == provider.requests[0].system
    assert compacted_note("the summary") in text_of(link)
    assert [m.text for m in manager.store.messages(view.id)][:2] == ["first", "one"]
    await manager.shutdown()

    reopened = scripted_manager(tmp_path, provider)
    await reopened.load_session(view.id, RecordingLink())
    await reopened.prompt(view.id, ask("third"), link)
    again = [m.text for m in provider.requests[3].messages]
    assert again == [summary_message("the summary").text, ACK, "second", "two", "third"]


async def test_a_failed_or_cancelled_compact_keeps_the_history(tmp_path: Path) -> None:
    hold = asyncio.Event()
    provider = ScriptedProvider.of(
        Reply(text="one"),
        ProviderError("overloaded"),
        Reply(text="never", hold=hold),
        Reply(text="two"),
    )
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    await manager.prompt(view.id, ask("first"), link)
    failed = await manager.prompt(view.id, ask("/compact"), link)
    assert failed.stop_reason == "end_turn"
    assert "/compact failed: overloaded" in text_of(link)

    provider.started.clear()
    compacting = asyncio.create_task(manager.prompt(view.id, ask("/compact"), link))
    await provider.started.wait()
    await manager.cancel(view.id)
    assert (await compacting).stop_reason == "cancelled"

    await manager.prompt(view.id, ask("second"), link)
    assert [m.text for m in provider.requests[-1].messages] == ["first", "one", "second"]


async def test_nothing_to_compact_in_a_new_session(tmp_path: Path) -> None:
    provider = ScriptedProvider.of()
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    outcome = await manager.prompt(view.id, ask("/compact"), link)
    assert outcome.stop_reason == "end_turn"
    assert text_of(link) == compacted_note("")
    assert provider.requests == []


def test_only_commands_the_runtime_can_run_are_routed() -> None:
    class Plain:
        pass

    class Clearing:
        async def clear_context(self) -> None:
            return None

    assert commands_for(Plain()) == (CONTINUE,)  # the session layer's own
    assert slash_command(ask("/clear"), Plain()) is None  # the model gets the text
    assert slash_command(ask("  /clear now"), Clearing()) == "clear"
    assert slash_command(ask("/clearly not"), Clearing()) is None
    assert slash_command(ask("please /clear"), Clearing()) is None
