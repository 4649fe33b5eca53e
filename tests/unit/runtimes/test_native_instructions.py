"""The instruction chain: read from the repository root down to the cwd when the
session starts, frozen into a system prompt that stays byte-identical for the life of
the session; a later change reaches the model as a reminder with the next message."""

from __future__ import annotations

from pathlib import Path

from loopd.instructions import read_chain, system_prompt
from loopd.protocol.events import Prompt, TextBlock
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("Outer rule: use tabs.")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "CLAUDE.md").write_text("Claude rule: be brief.")
    work = tmp_path / "pkg" / "app"
    work.mkdir()
    (work / "AGENTS.md").write_text("Inner rule: use spaces here.")
    return work.resolve()


def test_the_chain_runs_from_the_repository_root_down_outermost_first(tmp_path: Path) -> None:
    work = repo(tmp_path)
    chain = read_chain(str(work))
    root = tmp_path.resolve()
    assert list(chain) == [
        str(root / "AGENTS.md"),
        str(root / "pkg" / "CLAUDE.md"),
        str(work / "AGENTS.md"),
    ]
    prompt = system_prompt(str(work), (str(work),), chain)
    outer, claude, inner = (prompt.index(r) for r in ("Outer rule", "Claude rule", "Inner rule"))
    assert outer < claude < inner
    assert "Instructions from ../../AGENTS.md:" in prompt


def test_out_of_any_repository_only_the_cwd_is_read(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("above")
    work = tmp_path / "w"
    work.mkdir()
    (work / "AGENTS.md").write_text("here")
    assert list(read_chain(str(work)).values()) == ["here"]


async def test_the_system_prompt_never_changes_and_edits_arrive_as_reminders(
    tmp_path: Path,
) -> None:
    work = repo(tmp_path)
    provider = ScriptedProvider.of(*[Reply(text=f"r{n}") for n in range(8)])
    manager = scripted_manager(tmp_path / "data", provider)
    link = RecordingLink()
    view = await manager.new_session(str(work), link)
    await manager.prompt(view.id, ask("one"), link)
    (work / "AGENTS.md").write_text("Inner rule: use spaces, and never tabs.")
    (tmp_path / "AGENTS.md").unlink()
    await manager.set_config(view.id, "mode", "full_auto")
    await manager.set_config(view.id, "thought_level", "high")
    await manager.prompt(view.id, ask("two"), link)
    await manager.prompt(view.id, ask("three"), link)
    await manager.prompt(view.id, ask("/clear"), link)
    await manager.prompt(view.id, ask("four"), link)
    await manager.shutdown()

    reopened = scripted_manager(tmp_path / "data", provider)
    await reopened.load_session(view.id, RecordingLink())
    await reopened.prompt(view.id, ask("five"), link)

    systems = {r.system for r in provider.requests}
    assert len(systems) == 1
    (system,) = systems
    assert "Outer rule: use tabs." in system and "never tabs" not in system
    two, three = provider.requests[1].messages[-1].text, provider.requests[2].messages[-1].text
    assert "The instructions in AGENTS.md changed; they now read:" in two
    assert "use spaces, and never tabs." in two
    assert "../../AGENTS.md was removed" in two
    assert three == "three", "each change is told once"
    assert provider.requests[-1].messages[-1].text == "five"
