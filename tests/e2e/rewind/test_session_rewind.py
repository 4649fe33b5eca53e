"""Rewind through the whole native stack (`loopd.app`, the real tools and sandbox,
the fake model over loopback): three turns, the second changing files with bash,
then back to before the first, then redo."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.app import build_app
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.events import Prompt, TextBlock
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.harness import RecordingLink
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import anthropic_texts, isolated_env, run_loopd

pytestmark = pytest.mark.e2e

BASH = "echo bash > b.txt && rm keep.txt && echo more >> a.txt"
EDIT = {"path": "notes.txt", "old_string": "first", "new_string": "third"}
THREE_TURNS = (
    Reply(tool_calls=(ScriptedCall("write", {"path": "notes.txt", "content": "first turn\n"}),)),
    Reply(text="wrote notes"),
    Reply(tool_calls=(ScriptedCall("bash", {"command": BASH}),)),
    Reply(text="ran bash"),
    Reply(tool_calls=(ScriptedCall("read", {"path": "notes.txt"}),)),
    Reply(tool_calls=(ScriptedCall("edit", EDIT),)),
    Reply(text="edited notes"),
)
"""Turn one writes a file, turn two changes, creates and removes files with bash,
turn three edits what turn one wrote."""


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


def files(root: Path) -> dict[str, str]:
    """Every file under `root` and its text (the sandbox's empty mask folders aside)."""
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


def notes(link: RecordingLink) -> list[str]:
    return [
        u["content"].get("text", "")
        for _, u in link.updates
        if u["sessionUpdate"] == "agent_message_chunk"
    ]


async def test_rewind_to_before_the_first_prompt_and_redo(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("original\n")
    (workspace / "keep.txt").write_text("kept\n")
    before = files(workspace)
    fake_llm.script("*", *THREE_TURNS, Reply(text="fresh start"))
    app = build_app(isolated_env(tmp_path, fake_llm), str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link, config={"mode": "full_auto"})
        assert "rewind" in {c.name for c in view.commands}
        for text in ("one", "two", "three"):
            outcome = await app.manager.prompt(view.id, ask(text), link)
            assert outcome.stop_reason == "end_turn"
        after = files(workspace)
        assert after["notes.txt"] == "third turn\n" and after["b.txt"] == "bash\n"
        assert "keep.txt" not in after

        kinds = [p.kind for p in app.manager.checkpoints_of(view.id)]
        assert kinds == ["prompt", "after"] * 3  # each turn wrote: its after is kept
        await app.manager.prompt(view.id, ask("/rewind"), link)
        assert "1. before “one”" in notes(link)[-1]
        await app.manager.prompt(view.id, ask("/rewind 1"), link)
        assert notes(link)[-1].startswith("Restored the code and the conversation")
        assert files(workspace) == before

        await app.manager.prompt(view.id, ask("again"), link)
        sent = anthropic_texts(fake_llm.requests[-1].body)
        assert sent == ["again"]  # the context before the first prompt: nothing

        await app.manager.prompt(view.id, ask("/rewind redo"), link)
        assert files(workspace) == after
        journal = [str(e) for e in app.store.events(view.id)]
        assert any("'three'" in e for e in journal)  # the journal stays whole
        assert any("'/rewind 1'" in e for e in journal)
    finally:
        await app.aclose()


async def test_loopd_sessions_rewind_after_a_restart(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    """Three turns in one process; `loopd sessions rewind` in later ones lists the
    checkpoints, restores, refuses a file the person changed since, and redoes."""
    (workspace / "a.txt").write_text("original\n")
    (workspace / "keep.txt").write_text("kept\n")
    before = files(workspace)
    fake_llm.script("*", *THREE_TURNS, Reply(text="from the start"))
    env = isolated_env(tmp_path, fake_llm)
    app = build_app(env, str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link, config={"mode": "full_auto"})
        for text in ("one", "two", "three"):
            await app.manager.prompt(view.id, ask(text), link)
    finally:
        await app.aclose()
    after = files(workspace)

    listed = run_loopd(["sessions", "rewind", view.id], env, workspace)
    assert listed.returncode == 0 and "2. before “two”" in listed.stdout

    (workspace / "keep.txt").write_text("the person's, after the turns\n")
    refused = run_loopd(["sessions", "rewind", view.id, "1"], env, workspace)
    assert refused.returncode == 1
    assert str(workspace / "keep.txt") in refused.stderr and "force" in refused.stderr
    assert files(workspace)["notes.txt"] == "third turn\n"  # nothing was restored

    forced = run_loopd(["sessions", "rewind", view.id, "1", "--force"], env, workspace)
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.startswith("Restored the code and the conversation")
    assert files(workspace) == before

    redone = run_loopd(["sessions", "rewind", view.id, "redo"], env, workspace)
    assert redone.returncode == 0, redone.stderr
    assert files(workspace) == {**after, "keep.txt": "the person's, after the turns\n"}

    bad = run_loopd(["sessions", "rewind", view.id, "7"], env, workspace)
    assert bad.returncode == 2 and "no checkpoint before prompt 7" in bad.stderr


async def test_edit_an_earlier_prompt_and_fork_from_one(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    """Edit: the files and the context go back to before prompt 2, and the edited
    prompt runs there. Fork: a new session whose context is the one before prompt 2,
    while the first goes on unchanged."""
    (workspace / "a.txt").write_text("original\n")
    (workspace / "keep.txt").write_text("kept\n")
    fake_llm.script("*", *THREE_TURNS[:4], Reply(text="edited"), Reply(text="forked"))
    app = build_app(isolated_env(tmp_path, fake_llm), str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link, config={"mode": "full_auto"})
        for text in ("one", "two"):
            await app.manager.prompt(view.id, ask(text), link)
        assert not (workspace / "keep.txt").exists()

        outcome = await app.manager.edit(view.id, 2, ask("two, but gently"), link)
        assert outcome.stop_reason == "end_turn"
        assert (workspace / "keep.txt").read_text() == "kept\n"  # the bash turn undone
        sent = anthropic_texts(fake_llm.requests[-1].body)
        assert sent[0] == "one" and sent[-1] == "two, but gently" and "two" not in sent

        fork = await app.manager.fork_at(view.id, 2, str(workspace), RecordingLink())
        assert fork.id != view.id
        await app.manager.prompt(fork.id, ask("from the fork"), link)
        sent = anthropic_texts(fake_llm.requests[-1].body)
        assert sent[0] == "one" and "two, but gently" not in sent
        assert sent[-1] == "from the fork"
        assert [p.prompt for p in app.manager.checkpoints_of(fork.id) if p.kind == "prompt"][
            :2
        ] == [1, 2]
        kept = [m for m in app.store.messages(view.id) if m.role == "user"]
        assert len(kept) >= 2  # the first session's context is its own, untouched
    finally:
        await app.aclose()


async def test_a_turn_that_wrote_nothing_keeps_no_after_checkpoint(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    """A text-only turn leaves the write count as it was: only its prompt checkpoint
    is taken. A file the person changes meanwhile is then theirs, and asked about."""
    (workspace / "a.txt").write_text("original\n")
    fake_llm.script("*", Reply(text="just words"), Reply(text="more words"))
    app = build_app(isolated_env(tmp_path, fake_llm), str(workspace))
    try:
        link = RecordingLink(answers=[ApprovalDecision.REJECT_ONCE])
        view = await app.manager.new_session(str(workspace), link, config={"mode": "full_auto"})
        await app.manager.prompt(view.id, ask("one"), link)
        (workspace / "a.txt").write_text("the person's\n")
        await app.manager.prompt(view.id, ask("two"), link)
        assert [p.kind for p in app.manager.checkpoints_of(view.id)] == ["prompt", "prompt"]
        await app.manager.prompt(view.id, ask("/rewind 1 code"), link)
        (asked,) = link.asked  # the person's change is put to them, and kept
        assert [loc.path for loc in asked.locations] == [str(workspace / "a.txt")]
        assert notes(link)[-1].startswith("Nothing was restored")
        assert (workspace / "a.txt").read_text() == "the person's\n"
    finally:
        await app.aclose()
