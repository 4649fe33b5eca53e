"""Two session managers over one store file, as two loopd processes: a session is
live in one of them at a time, and their turns never interleave."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from loopd.protocol.errors import RuntimeFailure
from loopd.protocol.events import Prompt, TextBlock
from loopd.runtimes.base import Runtime, RuntimeContext
from loopd.sessions.manager import SessionHeld, SessionManager
from loopd.store.lease import TTL
from loopd.testing.fakes import FakeClock, Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


def manager(tmp_path: Path, reply: str, clock: FakeClock) -> SessionManager:
    made = scripted_manager(tmp_path, ScriptedProvider.of(*[Reply(text=reply)] * 3))
    return replace(made, lease_clock=clock.monotonic, table=None)  # leases on this clock


def roles(m: SessionManager, session_id: str) -> list[str]:
    return [msg.role for msg in m.store.messages(session_id)]


async def test_a_session_live_in_one_manager_is_refused_by_another(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    first, second = manager(tmp_path, "one", clock), manager(tmp_path, "two", clock)
    link = RecordingLink()
    view = await first.new_session(str(tmp_path), link)
    await first.prompt(view.id, ask("first"), link)

    with pytest.raises(SessionHeld, match=rf"session {view.id} is open in another loopd pro"):
        await second.load_session(view.id, RecordingLink())
    with pytest.raises(SessionHeld):
        await second.delete_session(view.id)
    assert second.store.events(view.id)  # reading it needs no lease

    await first.close_session(view.id, link)
    other = RecordingLink()
    await second.load_session(view.id, other)
    await second.prompt(view.id, ask("second"), other)
    with pytest.raises(SessionHeld):  # now the first is the other process
        await first.load_session(view.id, RecordingLink())
    assert roles(second, view.id) == ["user", "assistant", "user", "assistant"]


async def test_shutdown_releases_every_session(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    first, second = manager(tmp_path, "one", clock), manager(tmp_path, "two", clock)
    views = [await first.new_session(str(tmp_path), RecordingLink()) for _ in range(2)]
    await first.shutdown()
    for view in views:
        await second.load_session(view.id, RecordingLink())


async def test_a_stalled_holder_is_taken_over_and_its_next_turn_refused(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    first, second = manager(tmp_path, "one", clock), manager(tmp_path, "two", clock)
    link = RecordingLink()
    view = await first.new_session(str(tmp_path), link)

    clock.now += TTL + 1  # the first process hung past its lease
    other = RecordingLink()
    await second.load_session(view.id, other)
    await second.prompt(view.id, ask("second"), other)
    with pytest.raises(SessionHeld):
        await first.prompt(view.id, ask("first"), link)
    assert roles(second, view.id) == ["user", "assistant"]


@dataclass
class FailingFactory:
    name: str = "native"

    async def open(self, context: RuntimeContext) -> Runtime:
        raise RuntimeFailure("the runtime would not start")


async def test_a_session_that_fails_to_open_holds_no_lease(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    first, second = manager(tmp_path, "one", clock), manager(tmp_path, "two", clock)
    view = await first.new_session(str(tmp_path), RecordingLink())
    await first.shutdown()
    broken = replace(first, runtimes={"native": FailingFactory()})
    with pytest.raises(RuntimeFailure):
        await broken.load_session(view.id, RecordingLink())
    await second.load_session(view.id, RecordingLink())
