"""The prompt queue and steering, on the real session layer over a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopd.engine.steer import STEER_PREFIX
from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.turns import Outcome
from loopd.sessions.live import LiveSession
from loopd.sessions.manager import MAX_QUEUED, SessionBusy, SessionManager
from loopd.sessions.queue import NotRunning
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


async def until(condition: object) -> None:
    async with asyncio.timeout(5):
        while not condition():  # type: ignore[operator]  # noqa: ASYNC110
            await asyncio.sleep(0)


@dataclass
class Busy:
    """A session whose first turn ("a") streams until `release` is set."""

    manager: SessionManager
    provider: ScriptedProvider
    link: RecordingLink
    session_id: str
    running: asyncio.Task[Outcome]
    release: asyncio.Event

    def prompt(self, text: str) -> asyncio.Task[Outcome]:
        return asyncio.create_task(self.manager.prompt(self.session_id, ask(text), self.link))

    @property
    def live(self) -> LiveSession:
        return self.manager._live[self.session_id]


async def busy(tmp_path: Path, *after: Reply) -> Busy:
    release = asyncio.Event()
    provider = ScriptedProvider.of(Reply(text="A", hold=release), *after)
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    running = asyncio.create_task(manager.prompt(view.id, ask("a"), link))
    await provider.started.wait()
    return Busy(manager, provider, link, view.id, running, release)


async def test_cancelling_one_queued_prompt_leaves_the_rest(tmp_path: Path) -> None:
    b = await busy(tmp_path, Reply(text="C"))  # "b" never reaches the model
    second, third = b.prompt("b"), b.prompt("c")
    await until(lambda: b.live.waiting == 2)

    second.cancel()  # its request was cancelled ($/cancel_request for its id)
    await until(lambda: b.live.waiting == 1)
    assert not b.running.done()
    b.release.set()
    assert (await b.running).stop_reason == "end_turn"
    assert (await third).stop_reason == "end_turn"
    assert second.cancelled()
    asked = [r.messages[-1].text for r in b.provider.requests]
    assert asked == ["a", "c"]


async def test_a_queued_prompt_is_shown_as_queued(tmp_path: Path) -> None:
    b = await busy(tmp_path, Reply(text="B"))
    queued = b.prompt("then b")
    await until(lambda: any("_meta" in u for _, u in b.link.updates))
    note = next(u for _, u in b.link.updates if "_meta" in u)
    assert note["_meta"] == {"loopd/notice": "note", "loopd": {"queued": {"ahead": 1}}}
    assert note["content"]["text"].strip() == "[Queued: 'then b' runs after 1 turn.]"
    events = b.manager.store.events(b.session_id)
    assert all("Queued" not in str(e) for e in events)  # not journaled
    b.release.set()
    await b.running
    assert (await queued).stop_reason == "end_turn"


async def test_64_prompts_may_wait_and_the_next_is_refused(tmp_path: Path) -> None:
    b = await busy(tmp_path)
    waiting = [b.prompt(f"q{i}") for i in range(MAX_QUEUED)]
    await until(lambda: b.live.waiting == MAX_QUEUED)
    assert MAX_QUEUED == 64
    with pytest.raises(SessionBusy):
        await b.manager.prompt(b.session_id, ask("one too many"), b.link)
    await b.manager.cancel(b.session_id)
    await b.running
    await asyncio.gather(*waiting)


class WireLink(RecordingLink):
    """A link whose sends take a turn of the event loop, as a real connection's
    write does."""

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        await asyncio.sleep(0)
        await super().send_update(session_id, update)


async def test_a_burst_of_prompts_is_counted_as_it_arrives(tmp_path: Path) -> None:
    b = await busy(tmp_path)
    link = WireLink()
    burst = [
        asyncio.create_task(b.manager.prompt(b.session_id, ask(f"q{i}"), link))
        for i in range(MAX_QUEUED + 6)
    ]  # all sent before any is looked at: each telling its editor "queued" yields
    await until(lambda: sum(t.done() for t in burst) == 6)
    refused = [t for t in burst if t.done()]
    assert all(isinstance(t.exception(), SessionBusy) for t in refused)
    assert b.live.waiting == MAX_QUEUED
    await b.manager.cancel(b.session_id)
    await b.running
    await asyncio.gather(*burst, return_exceptions=True)


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
