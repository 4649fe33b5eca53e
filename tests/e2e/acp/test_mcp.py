"""MCP servers handed over in `session/new`, through the real `loopd acp`: a stdio
server and an HTTP one connected, their tools offered to the model under namespaced
names and called after the person approves; a server that cannot start is reported
before the turn's output and the session answers anyway; its prompts are slash
commands and its resources are read into a turn that links them."""

from __future__ import annotations

import json
import sys

import pytest
from acp.schema import (
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    ResourceContentBlock,
    TextContentBlock,
)

from loopd.testing.fake_mcp import PNG, FakeMcpHttpServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home
from tests.e2e.acp.test_loopd_acp import loopd_acp, sent_to_model, text
from tests.unit.acp.conftest import RecordingClient
from tests.unit.mcp.conftest import FAKE_MCP

pytestmark = pytest.mark.e2e


def fake_stdio(name: str, *flags: str) -> McpServerStdio:
    return McpServerStdio(name=name, command=sys.executable, args=[FAKE_MCP, *flags], env=[])


async def test_mcp_tools_are_offered_approved_and_their_results_reach_the_model(
    home: Home,
) -> None:
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("mcp__files__echo", {"text": "from stdio"}),)),
        Reply(tool_calls=(ScriptedCall("mcp__web__echo", {"text": "from http"}),)),
        Reply(text="both answered"),
    )
    client = RecordingClient(answers=["allow_once", "allow_once"])
    with FakeMcpHttpServer() as web:
        servers = [
            fake_stdio("files"),
            HttpMcpServer(
                type="http",
                name="web",
                url=web.url,
                headers=[HttpHeader(name="Authorization", value="Bearer t")],
            ),
        ]
        async with loopd_acp(home, client) as conn:
            new = await conn.new_session(cwd=str(home.work), mcp_servers=servers)
            result = await conn.prompt(session_id=new.session_id, prompt=text("use them"))
        assert web.deleted  # the session closed with the process: DELETE was sent
        assert all(h["authorization"] == "Bearer t" for _, h in web.requests)
    assert result.stop_reason == "end_turn"
    offered = [t["name"] for t in home.fake.requests[0].body["tools"]]
    assert {"read", "bash", "mcp__files__echo", "mcp__web__echo"} <= set(offered)
    assert [call.title for call, _ in client.permissions] == ["files: echo", "web: echo"]
    assert "echo: from stdio" in sent_to_model(home, 1)
    assert "echo: from http" in sent_to_model(home, 2)
    assert client.text() == "both answered"


async def test_a_server_that_fails_is_reported_and_the_session_still_answers(home: Home) -> None:
    home.fake.script("*", Reply(text="still here"))
    client = RecordingClient()
    servers = [fake_stdio("broken", "--crash"), fake_stdio("files")]
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=servers)
        result = await conn.prompt(session_id=new.session_id, prompt=text("hi"))
    assert result.stop_reason == "end_turn"
    shown = client.text()
    assert shown.startswith("Some MCP servers or tools are not available in this session:\n")
    assert "- broken: the server exited with code 3" in shown
    assert shown.endswith("still here")
    offered = json.dumps(home.fake.requests[0].body["tools"])
    assert "mcp__files__echo" in offered and "mcp__broken__" not in offered


async def test_a_changed_tool_list_and_an_image_result_reach_model_and_editor(
    home: Home,
) -> None:
    """The tool list a call changed is offered from the next turn: the turn that
    changed it keeps the tools it started with."""
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("mcp__files__grow", {}),)),
        Reply(text="grown"),
        Reply(tool_calls=(ScriptedCall("mcp__files__added", {}),)),
        Reply(tool_calls=(ScriptedCall("mcp__web__picture", {}),)),
        Reply(text="seen"),
    )
    client = RecordingClient(answers=["allow_once"] * 3)
    with FakeMcpHttpServer() as web:
        servers = [
            fake_stdio("files"),
            HttpMcpServer(type="http", name="web", url=web.url, headers=[]),
        ]
        async with loopd_acp(home, client) as conn:
            new = await conn.new_session(cwd=str(home.work), mcp_servers=servers)
            grew = await conn.prompt(session_id=new.session_id, prompt=text("grow"))
            result = await conn.prompt(session_id=new.session_id, prompt=text("look"))
    assert grew.stop_reason == result.stop_reason == "end_turn"
    offered = [{t["name"] for t in r.body["tools"]} for r in home.fake.requests]
    assert not any("mcp__files__added" in names for names in offered[:2])
    assert all("mcp__files__added" in names for names in offered[2:])
    assert "the added tool ran" in sent_to_model(home, 3)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    [picture] = home.fake.requests[4].body["messages"][-1]["content"]
    assert picture["type"] == "tool_result" and image in picture["content"]
    shown = [
        c["content"]
        for u in client.of("tool_call_update")
        for c in u.get("content") or ()
        if c["type"] == "content"
    ]
    assert {"type": "image", "data": PNG, "mimeType": "image/png"} in shown


async def test_a_servers_prompts_are_slash_commands_that_fill_in_the_turn(home: Home) -> None:
    home.fake.script("*", Reply(text="reviewed"))
    client = RecordingClient()
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[fake_stdio("files")])
        sid = new.session_id
        missing = await conn.prompt(session_id=sid, prompt=text("/mcp__files__review"))
        asked = len(home.fake.requests)
        result = await conn.prompt(session_id=sid, prompt=text("/mcp__files__review a.py speed"))
    commands = client.of("available_commands_update")[0]["availableCommands"]
    review = next(c for c in commands if c["name"] == "mcp__files__review")
    assert review == {
        "name": "mcp__files__review",
        "description": "Review a file. (MCP: files)",
        "input": {"hint": "file [focus]"},
    }
    assert missing.stop_reason == "end_turn" and asked == 0  # no turn ran
    assert "/mcp__files__review failed: /mcp__files__review needs file" in client.text()
    assert result.stop_reason == "end_turn"
    sent = sent_to_model(home, 0)
    assert "Review a.py, focusing on speed." in sent and "file:///a.py" in sent
    assert "/mcp__files__review" not in sent


async def test_a_mentioned_resource_reaches_the_model_and_an_unlisted_uri_is_not_read(
    home: Home,
) -> None:
    """A `resource_link` to a resource the session's server listed is read through
    that server into the turn; one to a uri it did not list (which the fake would
    serve) stays a link: loopd reads nothing it was not offered."""
    home.fake.script("*", Reply(text="read it"))
    client = RecordingClient()
    prompt = [
        TextContentBlock(type="text", text="what is the secret word?"),
        ResourceContentBlock(type="resource_link", uri="mem://notes/readme", name="readme"),
        ResourceContentBlock(type="resource_link", uri="mem://hidden/secret", name="secret"),
    ]
    async with loopd_acp(home, client) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[fake_stdio("notes")])
        sid = new.session_id
        listed = await conn.ext_method("loopd/session/mentions", {"sessionId": sid})
        result = await conn.prompt(session_id=sid, prompt=prompt)
    assert result.stop_reason == "end_turn"
    assert listed["mentions"][0] == {
        "server": "notes",
        "uri": "mem://notes/readme",
        "name": "readme",
        "title": "The readme",
        "description": "What the project is about.",
        "mimeType": "text/plain",
    }
    sent = sent_to_model(home, 0)
    assert '<resource uri=\\"mem://notes/readme\\">\\nThe secret word is PAPAYA.' in sent
    assert "mem://hidden/secret" in sent and "HIDDEN-SECRET" not in sent
