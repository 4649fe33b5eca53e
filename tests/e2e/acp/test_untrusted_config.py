"""An untrusted workspace file that cannot be used never stops `loopd acp`: the
session opens, the person is told the file was ignored, and the turn runs (the
issue's instance was `loopd run`, which failed in every such folder). Run again
through the daemon by `make test`."""

from __future__ import annotations

import pytest

from loopd.testing.fake_llm import Reply
from tests.e2e.acp.conftest import Home, prompt_params, raw_loopd, update_of

pytestmark = pytest.mark.e2e

BROKEN = {
    "not TOML": ("[defaults\n", "not valid TOML"),
    "a bad value": ('[defaults]\nmode = "yolo"\n', "defaults.mode"),
}


@pytest.mark.parametrize(("text", "why"), BROKEN.values(), ids=BROKEN.keys())
async def test_an_untrusted_file_that_cannot_be_used_is_ignored_and_the_turn_runs(
    home: Home, text: str, why: str
) -> None:
    config = home.work / ".loopd" / "config.toml"
    config.parent.mkdir()
    config.write_text(text)
    home.fake.script("*", Reply(text="ran anyway"))
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        response, seen = await agent.request("session/prompt", prompt_params(sid, "hi"))
    assert response["result"]["stopReason"] == "end_turn"
    said = "".join(
        u["content"]["text"]
        for u in map(update_of, seen)
        if u.get("sessionUpdate") == "agent_message_chunk"
    )
    assert "ran anyway" in said
    assert f"{config} is not trusted and cannot be used ({why}" in said
    assert "was ignored" in said
    assert len(home.fake.requests) == 1
