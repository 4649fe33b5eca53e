"""The instruction chain: read from the repository root down to the cwd when the
session starts, frozen into a system prompt that stays byte-identical for the life of
the session; a later change reaches the model as a reminder with the next message."""

from __future__ import annotations

import os
from pathlib import Path

from loopd.policy.reading import DiskReader
from loopd.protocol.events import Prompt, TextBlock
from loopd.runtimes.native.instructions import MAX_INSTRUCTION_BYTES, read_chain, system_prompt
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager
from loopd.tools import ToolEnv, ToolRegistry
from tests.unit.fifos import released

READER = DiskReader(())


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
    chain = read_chain(str(work), READER)
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
    assert list(read_chain(str(work), READER).values()) == ["here"]


def test_an_instruction_file_that_leads_out_blocks_or_is_secret_is_named_not_read(
    tmp_path: Path,
) -> None:
    work = repo(tmp_path)
    (work / "AGENTS.md").unlink()
    (work / "AGENTS.md").symlink_to("/proc/self/environ")
    (tmp_path / "pkg" / "CLAUDE.md").unlink()
    os.mkfifo(tmp_path / "pkg" / "CLAUDE.md")
    own = tmp_path / "loopd-data"  # $LOOPD_HOME inside the repository
    own.mkdir()
    (own / "login.json").write_text("sk-login-secret")
    (tmp_path / "AGENTS.md").unlink()
    (tmp_path / "AGENTS.md").symlink_to("loopd-data/login.json")
    with released(tmp_path / "pkg" / "CLAUDE.md") as blocked:
        chain = read_chain(str(work), DiskReader((), secrets=(str(own.resolve()),)))
    assert blocked == []
    said = "\n".join(chain.values())
    assert "PATH=" not in said and "sk-login-secret" not in said
    assert said.count("[loopd did not read") == 3
    assert "leads outside" in said and "named pipe (FIFO)" in said
    assert "loopd's own configuration" in said


def test_a_huge_instruction_file_is_read_up_to_its_bound_and_shown_cut(tmp_path: Path) -> None:
    work = repo(tmp_path)
    with (work / "AGENTS.md").open("r+b") as f:
        f.truncate(150 * 1024 * 1024)
    (text,) = [t for p, t in read_chain(str(work), READER).items() if p == str(work / "AGENTS.md")]
    assert len(text.encode()) <= MAX_INSTRUCTION_BYTES
    assert system_prompt(str(work), (str(work),), {"AGENTS.md": text}).endswith(
        "[... truncated ...]"
    )


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


async def test_a_turn_working_in_a_subfolder_is_given_its_instructions_once(
    tmp_path: Path,
) -> None:
    """`pkg/AGENTS.md` and `pkg/sub/CLAUDE.md` are for work there: not in the system
    prompt, given with the results of the first call that reads in `pkg/sub`, once;
    a folder the turn never touches is never read."""
    work = (tmp_path / "w").resolve()
    (work / ".git").mkdir(parents=True)
    (work / "AGENTS.md").write_text("Root rule.")
    (work / "pkg" / "sub").mkdir(parents=True)
    (work / "pkg" / "AGENTS.md").write_text("Pkg rule: use tabs.")
    (work / "pkg" / "sub" / "CLAUDE.md").write_text("Sub rule: be brief.")
    (work / "pkg" / "sub" / "m.py").write_text("x = 1\n")
    (work / "other").mkdir()
    (work / "other" / "AGENTS.md").write_text("Other rule.")
    read = ("read", {"path": "pkg/sub/m.py"})
    provider = ScriptedProvider.of(
        Reply(tools=[("r1", *read)]), Reply(tools=[("r2", *read)]), Reply(text="done")
    )
    env = ToolEnv(roots=(str(work),))
    manager = scripted_manager(tmp_path / "data", provider, tools=ToolRegistry(env))
    link = RecordingLink()
    view = await manager.new_session(str(work), link)
    await manager.prompt(view.id, ask("look"), link)
    await manager.shutdown()
    await env.aclose()

    first, second, third = provider.requests
    assert "Root rule." in first.system and "Pkg rule" not in first.system
    told = second.messages[-1].text
    assert "Instructions in pkg/AGENTS.md (they apply to work in pkg/):\nPkg rule" in told
    assert told.index("Pkg rule") < told.index("Sub rule: be brief.")
    assert sum("Pkg rule" in m.text for m in third.messages) == 1, "given once"
    assert not any("Other rule" in m.text for r in provider.requests for m in r.messages)
