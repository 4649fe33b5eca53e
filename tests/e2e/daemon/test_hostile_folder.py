"""A folder's FIFO in place of an instruction file or a skill, through one daemon:
in-process it blocked that session's open; in the daemon, every editor at once
(the issue's instance). Editor A opens a session in such a folder, editor B one in
a clean folder, and both turns end."""

from __future__ import annotations

import os

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, prompt_params, raw_loopd
from tests.e2e.daemon.conftest import shared, status
from tests.unit.fifos import released

pytestmark = pytest.mark.e2e


async def test_a_fifo_claude_md_or_skill_holds_no_editor(daemon_home: Home) -> None:
    home = daemon_home
    hostile = home.root / "hostile"
    skill = hostile / ".loopd" / "skills" / "deploy"
    skill.mkdir(parents=True)
    fifos = (hostile / "CLAUDE.md", skill / "SKILL.md")
    for fifo in fifos:
        os.mkfifo(fifo)
    home.fake.script("*", Reply(text="answered"))
    with released(*fifos) as blocked:
        async with raw_loopd(home, shared(home)) as a, raw_loopd(home, shared(home)) as b:
            a_sid = await a.new_session(hostile)
            b_sid = await b.new_session(home.work)
            assert (await status(home))["connections"] == 2  # one daemon serves both
            b_done, _ = await b.request("session/prompt", prompt_params(b_sid, "hi"))
            a_done, _ = await a.request("session/prompt", prompt_params(a_sid, "hi"))
    assert blocked == []
    assert b_done["result"]["stopReason"] == a_done["result"]["stopReason"] == "end_turn"
    system = str(home.fake.requests[-1].body.get("system"))
    assert "loopd did not read CLAUDE.md" in system
