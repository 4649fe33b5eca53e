"""Logging in from the editor, as the ACP registry's checks and Zed do it: no
credentials, so `session/new` answers `auth_required`; the client runs the declared
terminal method (`loopd acp login`) in a real terminal, where the person picks a
provider and pastes a key; `authenticate` then succeeds and a turn runs."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import LOOPD, Home, prompt_params, raw_loopd, update_of
from tests.e2e.cli.pty_process import PtyProcess

PROVIDER_VARIABLES = ("ANTHROPIC_", "OPENAI_", "OLLAMA_")


def _login_in_a_terminal(argv: list[str], env: dict[str, str], home: Home) -> str:
    program = PtyProcess(argv, env, home.work)
    try:
        program.expect(r"Which model provider\?[\s\S]*Choose 1-6")
        program.type("3\r")  # an OpenAI-compatible server
        program.expect(r"Server URL")
        program.type(home.fake.openai_base_url + "\r")
        program.expect(r"input hidden")
        program.type("sk-wrong\r")
        program.expect(r"The key was refused[\s\S]*input hidden")
        program.type("sk-e2e\r")
        program.expect(r"Default model\?[\s\S]*Choose 1-2")
        program.type("\r")  # the first one listed
        assert program.wait() == 0, program.output
    finally:
        program.proc.kill()
    return program.output


async def test_auth_required_then_login_in_a_terminal_then_a_turn(home: Home) -> None:
    env = {k: v for k, v in home.env().items() if not k.startswith(PROVIDER_VARIABLES)}
    home.fake.keys, home.fake.models = {"sk-e2e"}, ["e2e-model", "other-model"]
    home.fake.script("*", Reply(text="logged in and answering"))
    new_params = {"cwd": str(home.work), "mcpServers": []}
    async with raw_loopd(home, env) as agent:
        init, _ = await agent.request(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": True}}},
        )
        [method] = init["result"]["authMethods"]
        assert method["type"] == "terminal"
        refused, _ = await agent.request("session/new", new_params)
        assert refused["error"]["code"] == -32000
        assert refused["error"]["data"]["authMethods"][0]["id"] == method["id"]
        early, _ = await agent.request("authenticate", {"methodId": method["id"]})
        assert early["error"]["code"] == -32000

        screen = await asyncio.to_thread(_login_in_a_terminal, [*LOOPD, *method["args"]], env, home)
        assert "sk-e2e" not in screen  # the key is typed hidden

        accepted, _ = await agent.request("authenticate", {"methodId": method["id"]})
        assert accepted["result"] == {}
        new, _ = await agent.request("session/new", new_params)
        sid = new["result"]["sessionId"]
        assert new["result"]["models"]["currentModelId"] == "e2e-model"
        answer, seen = await agent.request("session/prompt", prompt_params(sid, "hi"))
    assert answer["result"]["stopReason"] == "end_turn"
    chunks = [update_of(m) for m in seen]
    said = "".join(
        u["content"]["text"] for u in chunks if u.get("sessionUpdate") == "agent_message_chunk"
    )
    assert said == "logged in and answering"
    [turn] = [r for r in home.fake.requests if r.path == "/v1/chat/completions"]
    assert turn.headers["authorization"] == "Bearer sk-e2e"
    assert turn.body["model"] == "e2e-model"
    _assert_stored_privately(home.root, "sk-e2e")


def _assert_stored_privately(root: Path, key: str) -> None:
    login = root / "data" / "login.json"
    assert stat.S_IMODE(login.stat().st_mode) == 0o600
    assert json.loads(login.read_text())["env"]["OPENAI_API_KEY"] == key
    for path in root.rglob("*"):
        if path.is_file() and path != login and path.suffix in (".toml", ".json", ".db"):
            assert key.encode() not in path.read_bytes(), path
