"""A child ACP agent's terminals through the real `loopd acp`: configured as
`[runtimes.scripted] harness = "acp"`, the scripted agent runs two commands in
terminals loopd serves; an `[approvals]` ask rule puts each to the editor's dialog,
which allows one and rejects the other. The allowed one runs in loopd's sandbox and
the editor sees it as a tool call; the rejected one never runs."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp.conftest import Home, home, loopd_acp, text
from tests.unit.acp.conftest import RecordingClient

__all__ = ["home"]
pytestmark = pytest.mark.e2e


def answered(log: Path) -> list[dict[str, Any]]:
    """What the scripted agent got back for each of its calls."""
    return [json.loads(line) for line in log.read_text().splitlines() if '"call"' in line]


def configure(home: Home, turns: list[list[dict[str, object]]]) -> Path:
    script = home.root / "script.json"
    log = home.root / "child.jsonl"
    script.write_text(json.dumps({"log": str(log), "turns": turns}))
    config = home.root / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    args = ["-m", "loopd.testing.scripted_acp", str(script)]
    config.write_text(
        '[approvals]\nask = ["bash(touch:*)"]\n\n'
        "[runtimes.scripted]\n"
        'harness = "acp"\n'
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps(args)}\n"
    )
    return log


async def test_the_editor_decides_a_child_terminal(home: Home) -> None:
    def create(command: str, name: str) -> dict[str, object]:
        return {"call": "terminal/create", "params": {"command": command}, "as": name}

    wait = {"call": "terminal/wait_for_exit", "params": {"terminalId": "$t"}}
    log = configure(home, [[create("touch approved", "t"), wait, create("touch refused", "u")]])
    client = RecordingClient(answers=["allow_once", "reject_once"])
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        await conn.set_config_option(
            config_id="runtime", session_id=new.session_id, value="scripted"
        )
        result = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("go")), 60
        )
    assert result.stop_reason == "end_turn"
    assert [c.title for c, _ in client.permissions] == [
        "Run `touch approved`",
        "Run `touch refused`",
    ]
    assert (home.work / "approved").exists()
    assert not (home.work / "refused").exists()
    answers = answered(log)
    assert answers[1]["result"] == {"exitCode": 0}
    assert "refused" in answers[2]["error"]["message"]
    statuses = [u.get("status") for u in client.of("tool_call_update")]
    assert "completed" in statuses and "failed" in statuses  # each shown as a tool call
