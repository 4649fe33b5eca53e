"""Cross-implementation: the official TypeScript client (`@agentclientprotocol/sdk`,
pinned in tests/clients/acp-ts) drives the real `loopd acp` (over the fake model)
through a whole session, and every
line the agent wrote is validated against the v1 JSON schema shipped in that package:
the `Agent` message union, and each response against its method's response type.

CI must install Node 20+ and run scripts/setup.sh (npm ci in tests/clients).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import LOOPD, ROOT, Home

pytestmark = pytest.mark.e2e

CLIENT_DIR = ROOT / "tests" / "clients" / "acp-ts"
NODE_MODULES = ROOT / "tests" / "clients" / "node_modules"
SDK = NODE_MODULES / "@agentclientprotocol" / "sdk"
RESPONSE_TYPES = {
    "initialize": "InitializeResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/prompt": "PromptResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/list": "ListSessionsResponse",
    "session/close": "CloseSessionResponse",
}
PARAM_TYPES = {  # what the agent may send on its own, by method
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
}


NEEDS_CLIENT = [
    pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js 20+"),
    pytest.mark.skipif(not SDK.exists(), reason="run scripts/setup.sh (npm ci in tests/clients)"),
]


@NEEDS_CLIENT[0]
@NEEDS_CLIENT[1]
async def test_the_typescript_client_drives_a_whole_session(home: Home) -> None:
    await drive_a_whole_session(home, LOOPD)


async def drive_a_whole_session(home: Home, agent: list[str], **env: str) -> None:
    """The TS client's whole session against `agent` (a command line), then every line
    the agent wrote checked against the schema (also run through `--remote`)."""
    work = home.work
    write = ScriptedCall("write", {"path": "a.py", "content": "print(2)\n"})
    home.fake.script("*", Reply(tool_calls=(write,)), Reply(text="done"))
    out, sent = home.root / "agent.ndjson", home.root / "client.ndjson"
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(CLIENT_DIR / "drive.mjs"),
        str(work),
        *agent,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=home.env(ACP_TEE_OUT=str(out), ACP_TEE_IN=str(sent), **env),
        cwd=work,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
    assert "Error handling" not in stderr.decode()  # the TS SDK drops invalid messages
    summary = json.loads(stdout.decode().strip().splitlines()[-1])

    assert summary["protocolVersion"] == 1
    assert summary["stopReason"] == "end_turn"
    assert summary["modes"] == ["plan", "ask", "accept_edits", "full_auto"]
    assert summary["mode"] == "plan"
    assert summary["listed"] is True
    assert summary["permissions"] == [
        {
            "title": "Create a.py",
            "kinds": ["allow_once", "allow_always", "reject_once", "reject_always"],
        }
    ]
    assert {"tool_call", "tool_call_update", "agent_message_chunk"} <= set(summary["updates"])
    assert (work / "a.py").read_text() == "print(2)\n"
    assert summary["replayed"][0] == "user_message_chunk"
    assert "tool_call" in summary["replayed"]

    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert_valid(written, _methods_by_id(sent))


def assert_valid(messages: list[dict[str, Any]], methods: dict[Any, str]) -> None:
    """The `Agent` union is only a lint (its params accept any extension), so each
    message is also checked against the exact type of its method."""
    schema = json.loads((SDK / "schema" / "v1" / "schema.json").read_text())
    defs = schema["$defs"]
    agent_union = Draft202012Validator({"$defs": defs, **schema["anyOf"][0]})
    checked: set[str] = set()
    for message in messages:
        errors = [e.message for e in agent_union.iter_errors(message)]
        assert not errors, (message, errors)
        if "method" in message:
            method = message["method"]
            typed, body = PARAM_TYPES[method], message["params"]
        elif "result" in message:
            method = methods[message["id"]]
            typed, body = RESPONSE_TYPES[method], message["result"]
        else:
            continue
        validator = Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/{typed}"})
        errors = [e.message for e in validator.iter_errors(body)]
        assert not errors, (method, message, errors)
        checked.add(method)
    assert checked == set(RESPONSE_TYPES) | set(PARAM_TYPES)


def _methods_by_id(sent: Path) -> dict[Any, str]:
    requests = (json.loads(line) for line in sent.read_text().splitlines())
    return {m["id"]: m["method"] for m in requests if "method" in m and "id" in m}
