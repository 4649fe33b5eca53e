"""The prompt's checkpoint and the model request overlap, and nothing of the turn
changes a file before the checkpoint settles (the whole native stack, the real tools,
the fake model over loopback).

The checkpoint is held by its own lock, as another session's checkpoint of a large
repository would hold it: the model is asked meanwhile, and its write waits. Once
the checkpoint is recorded the write runs; the checkpoint kept the file as it was
and the conversation as it was before the prompt (the engine journaled the prompt
while the checkpoint waited). When the checkpoint is skipped (the store is full),
the note says so before the write runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from loopd.app import build_app
from loopd.protocol.events import Prompt, TextBlock
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.harness import RecordingLink
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import anthropic_texts, isolated_env

pytestmark = pytest.mark.e2e

WRITE = Reply(tool_calls=(ScriptedCall("write", {"path": "new.txt", "content": "the agent's\n"}),))


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


async def until(seen: Callable[[], bool]) -> None:
    """Wait for `seen` to hold (an event of another task or thread); 60 s at most."""
    for _ in range(6000):
        if seen():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


def kinds(link: RecordingLink) -> list[str]:
    return [u["sessionUpdate"] for _, u in link.updates]


async def test_the_model_is_asked_while_the_checkpoint_runs_and_the_write_waits_for_it(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("original\n")
    fake_llm.script("*", WRITE, Reply(text="wrote"), Reply(text="fresh"))
    app = build_app(isolated_env(tmp_path, fake_llm), str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link, config={"mode": "full_auto"})
        checkpoints = app.manager.checkpoints
        assert checkpoints is not None
        checkpoints._lock.acquire()  # a checkpoint of another session runs
        try:
            turn = asyncio.create_task(app.manager.prompt(view.id, ask("one"), link))
            await until(lambda: "tool_call" in kinds(link))
            assert len(fake_llm.requests) == 1  # asked before the checkpoint was taken
            assert not (workspace / "new.txt").exists()  # the write waits
            assert not turn.done()
        finally:
            checkpoints._lock.release()
        assert (await turn).stop_reason == "end_turn"
        assert (workspace / "new.txt").read_text() == "the agent's\n"
        assert [p.kind for p in app.manager.checkpoints_of(view.id)] == ["prompt", "after"]

        await app.manager.prompt(view.id, ask("/rewind 1"), link)
        assert not (workspace / "new.txt").exists()  # the checkpoint saw it before the write
        assert (workspace / "a.txt").read_text() == "original\n"
        await app.manager.prompt(view.id, ask("again"), link)
        assert anthropic_texts(fake_llm.requests[-1].body) == ["again"]
    finally:
        await app.aclose()


async def test_a_skipped_checkpoint_is_said_before_the_write_runs(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("original\n")
    config = tmp_path / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[checkpoints]\nmax_bytes = 1\n")
    fake_llm.script("*", WRITE, Reply(text="wrote"))
    app = build_app(isolated_env(tmp_path, fake_llm), str(workspace))
    try:
        link = RecordingLink()
        view = await app.manager.new_session(str(workspace), link, config={"mode": "full_auto"})
        await app.manager.prompt(view.id, ask("one"), link)
    finally:
        await app.aclose()
    updates = [u for _, u in link.updates]
    said = next(
        i
        for i, u in enumerate(updates)
        if u["sessionUpdate"] == "agent_message_chunk"
        and u["content"]["text"].startswith("Checkpoint skipped")
    )
    wrote = next(
        i
        for i, u in enumerate(updates)
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
    )
    assert said < wrote
    assert (workspace / "new.txt").read_text() == "the agent's\n"
