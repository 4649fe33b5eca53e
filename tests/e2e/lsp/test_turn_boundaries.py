"""Option changes made while a turn runs apply at the next turn (seed 001), told to
an LSP editor as to an ACP one: `loopd/session/setConfigOption` answers with the
chosen value marked as waiting, a note arrives in `loopd/session/update`, and only
the next turn's request carries it. The real `loopd lsp`, the fake model over
loopback HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.e2e.acp.conftest import Home, home
from tests.e2e.acp.test_turn_boundaries import script_a_read
from tests.e2e.conftest import LOOPD
from tests.e2e.lsp.conftest import Start, start, until

__all__ = ["home", "start"]

pytestmark = pytest.mark.e2e


def prompt(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


async def test_thinking_chosen_mid_turn_waits_for_the_next_turn(start: Start, home: Home) -> None:
    script_a_read(home, home.root)
    editor = await start({}, server=([*LOOPD, "lsp"], home.env()))
    sid = await editor.new_session()
    first = asyncio.ensure_future(editor.request("loopd/session/prompt", prompt(sid, "go")))
    await until(lambda: "reading it" in editor.texts(), within=30)
    params = {"sessionId": sid, "configId": "thought_level", "value": "high"}
    answer = await editor.request("loopd/session/setConfigOption", params)
    [shown] = [o for o in answer["configOptions"] if o["id"] == "thought_level"]
    assert shown["currentValue"] == "high"
    assert "applies from the next turn" in shown["description"]
    await until(lambda: "thought level high: applies from the next turn" in editor.texts())
    home.fake.release("step")
    assert (await first)["stopReason"] == "end_turn"
    second = await editor.request("loopd/session/prompt", prompt(sid, "again"))
    assert second["stopReason"] == "end_turn"
    bodies = [r.body for r in home.fake.requests]
    assert len(bodies) == 3
    assert "thinking" not in bodies[0] and "thinking" not in bodies[1]  # the running turn
    assert bodies[2]["thinking"]["type"] == "enabled"  # the next one
