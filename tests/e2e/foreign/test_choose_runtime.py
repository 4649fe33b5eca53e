"""Choosing Claude Code as a session's runtime from the other frontends: the LSP
extension (`loopd/session/setConfigOption` against a real `loopd lsp`) and
`loopd run --runtime claude`. The fake model tells who called it: the real CLI
sends its own user agent."""

from __future__ import annotations

import subprocess

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home
from tests.e2e.conftest import LOOPD, pinned_binary
from tests.e2e.foreign.conftest import cli_env
from tests.e2e.lsp.conftest import Start, start

__all__ = ["start"]

pytestmark = pytest.mark.e2e


def called_by_claude_code(home: Home) -> bool:
    return all(r.headers["user-agent"].startswith("claude-cli/") for r in home.fake.requests)


async def test_the_lsp_extension_switches_a_session_to_claude(start: Start, home: Home) -> None:
    pinned_binary("claude")
    home.fake.script("*", Reply(text="hello from claude"))
    editor = await start({}, server=([*LOOPD, "lsp"], home.env(**cli_env())))
    sid = await editor.new_session()
    params = {"sessionId": sid, "configId": "runtime", "value": "claude"}
    switched = await editor.request("loopd/session/setConfigOption", params)
    chosen = {o["id"]: o["currentValue"] for o in switched["configOptions"]}
    assert (chosen["runtime"], chosen["model"]) == ("claude", "sonnet")
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    done = await editor.request("loopd/session/prompt", prompt)
    assert done["stopReason"] == "end_turn"
    assert editor.texts() == "hello from claude"
    assert home.fake.requests and called_by_claude_code(home)


def test_loopd_run_with_runtime_claude(home: Home) -> None:
    pinned_binary("claude")
    home.fake.script("*", Reply(text="hello from claude"))
    done = subprocess.run(
        [*LOOPD, "run", "say hi", "--runtime", "claude", "--yes"],
        env=home.env(**cli_env()),
        cwd=home.work,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello from claude"
    assert home.fake.requests and called_by_claude_code(home)
