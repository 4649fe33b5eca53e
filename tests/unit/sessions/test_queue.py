"""The prompt queue and steering, on the real session layer over a scripted model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from loopd.engine.steer import STEER_PREFIX
from loopd.protocol.events import Prompt, TextBlock
from loopd.sessions.manager import MAX_QUEUED, SessionBusy
from loopd.sessions.queue import NotRunning
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


async def until(condition: object) -> None:
    async with asyncio.timeout(5):
        while not condition():  # type: ignore[operator]  # noqa: ASYNC110
            await asyncio.sleep(0)


async def test_cancelling_one_queued_prompt_leaves_the_rest(tmp_path: Path) -> None:
    release = asyncio.Event()
    provider = ScriptedProvider.of(
        Reply(text="A", hold=release),
        Reply(text="C"),  # "B" never reaches the model
    )
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    running = asyncio.create_task(manager.prompt(view.id, ask("a"), link))
    await provider.started.wait()
    second = asyncio.create_task(manager.prompt(view.id, ask("b"), link))
    third = asyncio.create_task(manager.prompt(view.id, ask("c"), link))
    live = manager._live[view.id]
    await until(lambda: live.waiting == 2)

    second.cancel()  # its request was cancelled ($/cancel_request for its id)
    await until(lambda: live.waiting == 1)
    assert not running.done()
    release.set()
    assert (await running).stop_reason == "end_turn"
    assert (await third).stop_reason == "end_turn"
    assert second.cancelled()
    asked = [r.messages[-1].text for r in provider.requests]
    assert asked == ["a", "c"]


async def test_a_queued_prompt_is_shown_as_queued(tmp_path: Path) -> None:
    release = asyncio.Event()
    provider = ScriptedProvider.of(Reply(text="A", hold=release), Reply(text="B"))
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    running = asyncio.create_task(manager.prompt(view.id, ask("a"), link))
    await provider.started.wait()
    queued = asyncio.create_task(manager.prompt(view.id, ask("then b"), link))
    await until(lambda: any("_meta" in u for _, u in link.updates))
    note = next(u for _, u in link.updates if "_meta" in u)
    assert note["_meta"] == {"loopd": {"queued": {"ahead": 1}}}
    assert note["content"]["text"].strip() == "[Queued: 'then b' runs after 1 turn.]"
    assert all("Queued" not in str(e) for e in manager.store.events(view.id))  # not journaled
    release.set()
    await running
    assert (await queued).stop_reason == "end_turn"


async def test_64_prompts_may_wait_and_the_next_is_refused(tmp_path: Path) -> None:
    release = asyncio.Event()
    provider = ScriptedProvider.of(Reply(text="A", hold=release))
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    running = asyncio.create_task(manager.prompt(view.id, ask("a"), link))
    await provider.started.wait()
    waiting = [
        asyncio.create_task(manager.prompt(view.id, ask(f"q{i}"), link)) for i in range(MAX_QUEUED)
    ]
    live = manager._live[view.id]
    await until(lambda: live.waiting == MAX_QUEUED)
    assert MAX_QUEUED == 64
    with pytest.raises(SessionBusy):
        await manager.prompt(view.id, ask("one too many"), link)
    await manager.cancel(view.id)
    await running
    await asyncio.gather(*waiting)


async def test_steering_reaches_the_running_turn_and_only_it(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(
        Reply(text="working on it", hold=asyncio.Event()), Reply(text="ok, only tests")
    )
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    with pytest.raises(NotRunning):
        await manager.steer(view.id, "nothing runs yet")
    running = asyncio.create_task(manager.prompt(view.id, ask("go"), link))
    await provider.started.wait()
    await manager.steer(view.id, "only the tests")
    assert (await running).stop_reason == "end_turn"
    assert provider.requests[1].messages[-1].text == f"{STEER_PREFIX}\nonly the tests"
    shown = [u for _, u in link.updates if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["text"] for u in shown] == ["only the tests"]
    journal = [
        e for e in manager.store.events(view.id) if e["sessionUpdate"] == "user_message_chunk"
    ]
    assert [e["content"]["text"] for e in journal] == ["go", "only the tests"]
