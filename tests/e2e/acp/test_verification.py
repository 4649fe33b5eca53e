"""The verification seal through the real `loopd acp`: `_meta.loopd.verification` on
the session/prompt answer, the seal in the update stream, and a short visible line."""

from __future__ import annotations

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, loopd_acp, text
from tests.e2e.conftest import trusted_config
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e


def write(content: str) -> Reply:
    return Reply(tool_calls=(ScriptedCall("write", {"path": "app.txt", "content": content}),))


async def test_the_seal_and_an_incomplete_turn_reach_the_editor(home: Home) -> None:
    trusted_config(home.work, home.env())
    home.fake.script(
        "*",
        write("bad\n"),
        Reply(text="Done."),
        write("worse\n"),
        Reply(text="Done again."),
        write("good\n"),
        Reply(text="Fixed."),
    )
    client = RecordingClient(answers=["allow_always"])
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        first = await conn.prompt(session_id=new.session_id, prompt=text("make it good"))
        second = await conn.prompt(session_id=new.session_id, prompt=text("try again"))

    assert first.stop_reason == "end_turn"
    seal = (first.field_meta or {})["loopd"]["verification"]
    assert seal["incomplete"] and seal["seal"] == "failed" and seal["unmet"] == ["content"]
    assert seal["criteria"] == [{"name": "content", "state": "unmet", "exitCode": 1}]
    assert "Verification incomplete: unmet content" in client.text()
    streamed = [
        u["_meta"]["loopd"]["verification"]["seal"]
        for u in client.of("session_info_update")
        if "_meta" in u
    ]
    assert streamed == ["failed", "passed"]
    assert (second.field_meta or {})["loopd"]["verification"]["seal"] == "passed"
    assert "Verification passed" in client.text()


@pytest.mark.parametrize("command", ["/undo", "/rewind 1 code"])
async def test_a_change_put_back_after_a_passed_check_is_checked_again(
    home: Home, command: str
) -> None:
    """What `/undo` or a restore puts back is a write like the agent's own: the
    check made before it says nothing about the files now."""
    trusted_config(home.work, home.env())
    home.fake.script(
        "*",
        write("good\n"),
        Reply(text="Done."),
        Reply(text="Yes, it is good."),  # checked again, so sent back
        Reply(text="Yes, still."),
    )
    client = RecordingClient(answers=["allow_always"])
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        sid = new.session_id
        first = await conn.prompt(session_id=sid, prompt=text("make it good"))
        await conn.prompt(session_id=sid, prompt=text(command))
        again = await conn.prompt(session_id=sid, prompt=text("is it good?"))

    assert (first.field_meta or {})["loopd"]["verification"]["seal"] == "passed"
    assert not (home.work / "app.txt").exists()  # put back: the turn had made it
    assert (again.field_meta or {})["loopd"]["verification"]["seal"] == "failed"
