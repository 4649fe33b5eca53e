# ruff: noqa: ASYNC230, ASYNC240 -- the test inspects real files
"""50 MB of command output through `loopd acp` costs the editor a few MB of
updates, the store a few MB, and the model 30k characters; the whole output is in a
private file the result names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopd.testing.fake_llm import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, prompt_params, raw_loopd, update_of

pytestmark = pytest.mark.e2e

FLOOD = "yes 0123456789abcdef | head -c 50000000; echo; echo THE END"
ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def test_fifty_mb_of_output_is_a_few_mb_of_updates(home: Home) -> None:
    home.fake.script(
        "*", Reply(tool_calls=(ScriptedCall("bash", {"command": FLOOD}),)), Reply(text="ok")
    )
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        done, seen = await agent.request("session/prompt", prompt_params(sid, "go"), ALLOW)
        assert done["result"]["stopReason"] == "end_turn"

    wire = sum(len(line) for line in agent.lines)
    assert wire < 4_000_000
    data = home.root / "data"
    assert sum(p.stat().st_size for p in data.glob("sessions.db*")) < 8_000_000
    assert len(json.dumps(home.fake.requests[1].body)) < 100_000
    final = [u for u in map(update_of, seen) if u.get("status") == "completed"][-1]
    shown = final["content"][0]["content"]["text"]
    spill = Path(final["rawOutput"]["full_output"])
    assert f"the full output is in {spill}" in shown and "THE END" in shown
    assert spill.parent == data / "outputs" / sid
    assert spill.stat().st_size >= 50_000_000
    with spill.open("rb") as f:
        f.seek(-9, 2)
        assert f.read() == b"\nTHE END\n"
