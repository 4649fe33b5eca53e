"""Slash commands the session layer runs itself: `/clear`."""

from __future__ import annotations

from pathlib import Path

from loopd.protocol.events import Prompt, TextBlock
from loopd.sessions.commands import CLEAR, CLEARED_NOTE, commands_for, slash_command
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


async def test_clear_starts_a_fresh_context_that_survives_a_restart(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(text="one"), Reply(text="two"))
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    assert view.commands == (CLEAR,)
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


def test_only_commands_the_runtime_can_run_are_routed() -> None:
    class Plain:
        pass

    class Clearing:
        async def clear_context(self) -> None:
            return None

    assert commands_for(Plain()) == ()
    assert slash_command(ask("/clear"), Plain()) is None  # the model gets the text
    assert slash_command(ask("  /clear now"), Clearing()) == "clear"
    assert slash_command(ask("/clearly not"), Clearing()) is None
    assert slash_command(ask("please /clear"), Clearing()) is None
