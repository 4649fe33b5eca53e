"""MCP resources as @-mentions through the real `loopd lsp` (the shipped composition
root, native engine, store) on the loopback fake model, with the fake MCP server as
a real child: `loopd/session/mentions` lists the session's resources; a prompt that
links one has its text reach the model; a uri the server did not list is not read;
a server that changes its list (`notifications/resources/list_changed`) has the new
resource listed and mentionable."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.lsp.conftest import ROOT, Editor, Start
from tests.unit.mcp.conftest import FAKE_MCP

pytestmark = pytest.mark.e2e


def lsp_env(home: Path, fake: FakeLLMServer) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "LOOPD_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "x",
        "PYTHONPATH": str(ROOT / "server"),
    }


async def open_session(editor: Editor, home: Path) -> str:
    server = {"name": "notes", "command": sys.executable, "args": [FAKE_MCP], "env": []}
    params = {"cwd": str(home), "mcpServers": [server]}
    result = await editor.request("loopd/session/new", params)
    return str(result["sessionId"])


async def mentions(editor: Editor, session_id: str) -> list[dict[str, Any]]:
    listed = await editor.request("loopd/session/mentions", {"sessionId": session_id})
    return list(listed["mentions"])


def link(uri: str, name: str) -> dict[str, str]:
    return {"type": "resource_link", "uri": uri, "name": name}


def sent(fake: FakeLLMServer, index: int) -> str:
    return json.dumps(fake.requests[index].body)


async def test_a_mentioned_resource_reaches_the_model_and_an_unlisted_one_is_not_read(
    start: Start, tmp_path: Path
) -> None:
    with FakeLLMServer() as fake:
        fake.script("*", Reply(text="PAPAYA, it says"))
        server = ([sys.executable, "-m", "loopd", "lsp"], lsp_env(tmp_path, fake))
        editor = await start({}, server=server)
        assert editor.server is not None
        offered = editor.server.capabilities.experimental["loopd"]["requests"]
        sid = await open_session(editor, tmp_path)
        listed = await mentions(editor, sid)
        prompt = [
            {"type": "text", "text": "what is the secret word?"},
            link("mem://notes/readme", "readme"),
            link("mem://hidden/secret", "secret"),
        ]
        answer = await editor.request("loopd/session/prompt", {"sessionId": sid, "prompt": prompt})
        to_model = sent(fake, 0)
    assert "loopd/session/mentions" in offered
    assert [(m["server"], m["uri"]) for m in listed] == [
        ("notes", "mem://notes/readme"),
        ("notes", "mem://images/dot.png"),
        ("notes", "mem://data/blob.bin"),
        ("notes", "mem://notes/big"),
    ]
    assert listed[0]["description"] == "What the project is about."
    assert answer["stopReason"] == "end_turn"
    assert '<resource uri=\\"mem://notes/readme\\">\\nThe secret word is PAPAYA.' in to_model
    assert "mem://hidden/secret" in to_model and "HIDDEN-SECRET" not in to_model


async def test_a_changed_resource_list_is_listed_and_mentionable(
    start: Start, tmp_path: Path
) -> None:
    with FakeLLMServer() as fake:
        fake.script(
            "*",
            Reply(tool_calls=(ScriptedCall("mcp__notes__publish", {}),)),
            Reply(text="published"),
            Reply(text="MANGO"),
        )
        server = ([sys.executable, "-m", "loopd", "lsp"], lsp_env(tmp_path, fake))
        editor = await start({}, server=server)
        sid = await open_session(editor, tmp_path)
        before = [m["uri"] for m in await mentions(editor, sid)]
        editor.answers.append("allow_once")
        publish = [{"type": "text", "text": "publish it"}]
        await editor.request("loopd/session/prompt", {"sessionId": sid, "prompt": publish})
        after = [m["uri"] for m in await mentions(editor, sid)]
        late = [{"type": "text", "text": "and now?"}, link("mem://notes/late", "late")]
        await editor.request("loopd/session/prompt", {"sessionId": sid, "prompt": late})
        to_model = sent(fake, 2)
    assert "mem://notes/late" not in before
    assert after == [*before, "mem://notes/late"]
    assert "Published later: MANGO" in to_model


async def test_mentions_of_a_session_not_open_here_are_refused(
    start: Start, tmp_path: Path
) -> None:
    editor = await start({})
    with pytest.raises(Exception, match="not open on this connection"):
        await mentions(editor, "sess_nowhere")
