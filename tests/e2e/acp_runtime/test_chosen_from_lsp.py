"""The ACP-agent runtime chosen from the LSP extension: `loopd/session/setConfigOption`
with `runtime` switches a session opened in Neovim or VS Code to
`@agentclientprotocol/claude-agent-acp` (against the fake model), and its reply
streams back as `loopd/session/update`s."""

from __future__ import annotations

import sys

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, home
from tests.e2e.acp_runtime.test_claude_agent_acp import RUNTIME, configure
from tests.e2e.lsp.conftest import Start, start

__all__ = ["home", "start"]
pytestmark = pytest.mark.e2e


async def test_the_acp_runtime_is_chosen_from_the_extension(home: Home, start: Start) -> None:
    configure(home)
    home.fake.script("*", Reply(text="hello from the ACP agent", chunk=6))
    editor = await start({}, server=([sys.executable, "-m", "loopd", "lsp"], home.env()))
    session_id = await editor.new_session()
    chosen = await editor.request(
        "loopd/session/setConfigOption",
        {"sessionId": session_id, "configId": "runtime", "value": RUNTIME},
    )
    options = {o["id"]: o for o in chosen["configOptions"]}
    assert options["runtime"]["currentValue"] == RUNTIME
    result = await editor.request(
        "loopd/session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]},
    )
    assert result["stopReason"] == "end_turn"
    assert editor.texts() == "hello from the ACP agent"
    agents = {r.headers.get("user-agent", "").split("/")[0] for r in home.fake.requests}
    assert agents == {"claude-cli"}  # Claude Code asked the fake, not loopd's own engine
