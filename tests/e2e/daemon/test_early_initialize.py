"""ACP's `initialize` answered by the forwarder before the daemon's stack is up, from
what the last daemon of this code wrote (`loopd.daemon.early`): the same bytes as
the daemon's own answer, never an answer written under another key, and the
connection then served as ever (no second answer, sessions open).

Every start here is cold: the daemon is stopped first, so the forwarder starts one
and answers while it starts."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopd.daemon.early import answers_path
from loopd.daemon.place import place_of
from tests.e2e.acp.conftest import Home, raw_loopd
from tests.e2e.daemon.conftest import loopd, shared

pytestmark = pytest.mark.e2e

INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": True}, "auth": {"terminal": True}},
    "clientInfo": {"name": "an-editor", "version": "1.2.3"},
}
MARK = "written by hand"


@dataclass(frozen=True)
class Start:
    answer: bytes  # the `initialize` answer's raw line
    before: list[dict[str, Any]]  # what came before the answer to `session/new`
    stderr: str  # the editor's log


async def cold_start(home: Home) -> Start:
    """A cold start's `initialize`, then a `session/new` (the session must open)."""
    await loopd(home, "daemon", "stop")
    async with raw_loopd(home, shared(home)) as agent:
        await agent.request("initialize", INITIALIZE)
        line = agent.lines[-1].encode()
        new, before = await agent.request("session/new", {"cwd": str(home.work), "mcpServers": []})
        assert "sessionId" in new["result"], new
        assert agent.proc.stdin is not None
        agent.proc.stdin.close()
        assert agent.proc.stderr is not None
        stderr = await asyncio.wait_for(agent.proc.stderr.read(), 30)
        assert await asyncio.wait_for(agent.proc.wait(), 30) == 0
    return Start(line, before, stderr.decode())


def written(home: Home) -> Path:
    place = place_of(shared(home))
    return Path(answers_path(place.folder, place.name))


def hand_edit(home: Home, key: str | None = None) -> None:
    """Mark every written answer (and give the file another key, when asked)."""
    body = json.loads(written(home).read_text())
    for answer in body["answers"]:
        result = json.loads(answer["result"])
        result["agentInfo"]["title"] = MARK
        answer["result"] = json.dumps(result, separators=(",", ":"))
    body["key"] = body["key"] if key is None else key
    written(home).write_text(json.dumps(body))


def edit_config(home: Home) -> None:
    config = home.root / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("# edited since\n")


def lock_in_the_way(home: Home) -> None:
    """A folder where the daemon's lock goes: a daemon dies before it listens."""
    lock = Path(place_of(shared(home)).lock)
    lock.unlink(missing_ok=True)
    lock.mkdir()


def answered_twice(start: Start) -> bool:
    return any(m.get("id") == 1 for m in start.before)


async def test_the_forwarders_answer_is_byte_for_byte_the_daemons_own(home: Home) -> None:
    own = await cold_start(home)  # nothing written yet: the daemon's stack answers
    assert written(home).exists()
    early = await cold_start(home)  # the forwarder answers, from what it wrote
    assert early.answer == own.answer
    assert not answered_twice(early)
    assert "was not this daemon's own" not in early.stderr


async def test_the_answer_comes_before_the_stack_and_a_wrong_one_is_mended(home: Home) -> None:
    own = await cold_start(home)
    hand_edit(home)
    early = await cold_start(home)
    assert json.loads(early.answer)["result"]["agentInfo"]["title"] == MARK  # the forwarder's
    assert not answered_twice(early)
    assert "was not this daemon's own" in early.stderr
    mended = await cold_start(home)  # the daemon wrote its own down again
    assert mended.answer == own.answer


async def test_a_changed_config_is_another_key_and_its_answers_are_not_used(
    home: Home,
) -> None:
    own = await cold_start(home)
    hand_edit(home)
    edit_config(home)
    again = await cold_start(home)
    assert again.answer == own.answer


async def test_answers_written_under_another_code_stamp_are_not_used(home: Home) -> None:
    own = await cold_start(home)
    key = json.loads(written(home).read_text())["key"]
    stamp, config = key.split(":")
    hand_edit(home, key=f"{'0' * len(stamp)}:{config}")  # another version's, say
    again = await cold_start(home)
    assert again.answer == own.answer


async def test_other_params_get_the_stacks_answer(home: Home) -> None:
    await cold_start(home)
    hand_edit(home)
    await loopd(home, "daemon", "stop")
    async with raw_loopd(home, shared(home)) as agent:
        answer, _ = await agent.request("initialize", {"protocolVersion": 1})
        assert answer["result"]["agentInfo"]["title"] == "loopd"
        assert answer["result"]["authMethods"][0].get("type") != "terminal"


async def test_served_in_process_after_an_early_answer_when_no_daemon_starts(
    home: Home,
) -> None:
    """The forwarder answered, then no daemon could start (its lock is a folder
    here): the connection is served in the forwarder's process, which reads what
    was read ahead, answers nothing twice, and opens sessions."""
    await cold_start(home)
    hand_edit(home)
    await loopd(home, "daemon", "stop")
    lock_in_the_way(home)
    early = await cold_start(home)
    assert json.loads(early.answer)["result"]["agentInfo"]["title"] == MARK
    assert not answered_twice(early)
    assert "serving here" in early.stderr
