"""Network by domain through the editors: an unknown host is put to the person as a
permission request (ACP `session/request_permission`, LSP
`loopd/session/requestPermission`) naming the host, and the answer holds as said:
once for the command, always for the session, rejected.

All traffic stays on loopback (`netrig`'s test hook and fake registry).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import ClientCapabilities, Implementation, TextContentBlock

from loopd.testing.fake_llm import FakeLLMServer, Reply
from tests.e2e.acp.editor import EditorClient
from tests.e2e.lsp.conftest import Start, start, until
from tests.e2e.safety.conftest import calls, loopd_acp, needs_bwrap
from tests.e2e.safety.netrig import (
    HELLO,
    NetBox,
    Registries,
    curl,
    journal,
    needs_curl,
    registries,
)
from tests.unit.acp.conftest import RecordingClient

__all__ = ["start"]

pytestmark = [pytest.mark.e2e, needs_bwrap, needs_curl]


@pytest.fixture
def nets() -> Iterator[Registries]:
    with registries() as found:
        yield found


def bash(url: str) -> Reply:
    return calls(("bash", {"command": curl(url)}))


def results(requests: list[dict[str, object]]) -> str:
    return json.dumps(requests)


async def test_acp_asks_about_an_unknown_host_and_keeps_the_answer(
    tmp_path: Path, nets: Registries
) -> None:
    box = NetBox.within(tmp_path, nets)
    script = [
        bash("http://also.test/hello?via=acp-rejected"),
        bash("http://unlisted.test/hello?via=acp-once"),
        bash("http://unlisted.test/hello?via=acp-always"),
        bash("http://unlisted.test/hello?via=acp-again"),
        Reply(text="done"),
    ]
    client = RecordingClient(answers=["reject_once", "allow_once", "allow_always"])
    run = await loopd_acp(box, client, script)
    assert run.stop_reason == "end_turn"
    asked = [(call.title or "", call.tool_call_id) for call, _ in client.permissions]
    assert [title.split(" (")[0] for title, _ in asked] == [
        "Connect to also.test:80",
        "Connect to unlisted.test:80",  # once: for that command alone, so
        "Connect to unlisted.test:80",  # the next command is asked again
    ]  # the fourth call was not asked: "always" holds for the session
    bash_ids = [u["toolCallId"] for u in client.of("tool_call")]
    assert [call_id for _, call_id in asked] == bash_ids[:3]
    assert "/hello?via=acp-rejected" not in nets.registry.hits
    reached = {"/hello?via=acp-once", "/hello?via=acp-always", "/hello?via=acp-again"}
    assert reached <= set(nets.registry.hits)
    said = run.bodies
    assert "also.test:80 refused (asked: rejected)" in said
    assert "unlisted.test:80 allowed (asked: allowed)" in said
    assert "unlisted.test:80 allowed (allowed always by the user)" in said and HELLO in said
    shown = json.dumps(client.of("tool_call_update"))  # in the editor's tool calls
    assert "also.test:80 refused (asked: rejected)" in shown
    assert "unlisted.test:80 allowed (allowed always by the user)" in shown
    kept = journal(box)  # each request is in the session's journal too
    assert "also.test:80 refused (asked: rejected)" in kept
    assert "unlisted.test:80 allowed (allowed always by the user)" in kept


async def test_lsp_asks_about_an_unknown_host(
    start: Start, tmp_path: Path, nets: Registries
) -> None:
    """A listed host unasked, then an unknown one: once, always, then not asked."""
    box = NetBox.within(tmp_path / "box", nets)
    with FakeLLMServer() as fake:
        fake.script(
            "*",
            bash("http://pypi.test/hello?via=lsp-listed"),
            bash("http://unlisted.test/hello?via=lsp-once"),
            bash("http://unlisted.test/hello?via=lsp-always"),
            bash("http://unlisted.test/hello?via=lsp-again"),
            Reply(text="done"),
        )
        argv = ["sh", "-c", f'cd "{box.ws}" && exec "{sys.executable}" -m loopd lsp']
        editor = await start({}, server=(argv, box.env(fake.base_url)))
        editor.answers.extend(["allow_once", "allow_always"])
        created = await editor.request("loopd/session/new", {"cwd": str(box.ws), "mcpServers": []})
        done = await editor.request(
            "loopd/session/prompt",
            {"sessionId": created["sessionId"], "prompt": [{"type": "text", "text": "go"}]},
        )
        bodies = results([r.body for r in fake.requests])
    assert done["stopReason"] == "end_turn"
    titles = [asked["toolCall"]["title"] for asked in editor.permission_requests]
    assert [t.split(" (")[0] for t in titles] == ["Connect to unlisted.test:80"] * 2
    hits = set(nets.registry.hits)
    assert {f"/hello?via=lsp-{w}" for w in ("listed", "once", "always", "again")} <= hits
    assert HELLO in bodies and "pypi.test:80 allowed (pypi.test)" in bodies
    assert "unlisted.test:80 allowed (asked: allowed)" in bodies
    assert "unlisted.test:80 allowed (allowed always by the user)" in journal(box)


async def test_a_plain_lsp_client_is_asked_in_a_dialog(
    start: Start, tmp_path: Path, nets: Registries
) -> None:
    """VS Code without the extension's request: `window/showMessageRequest`."""
    box = NetBox.within(tmp_path / "box", nets)
    with FakeLLMServer() as fake:
        fake.script("*", bash("http://unlisted.test/hello?via=dialog"), Reply(text="done"))
        argv = ["sh", "-c", f'cd "{box.ws}" && exec "{sys.executable}" -m loopd lsp']
        editor = await start({}, profile="plain", server=(argv, box.env(fake.base_url)))
        editor.answers.append("Reject")
        await editor.command("loopd.ask", {"prompt": "go"})
        await until(lambda: len(fake.requests) >= 2, within=60)
        bodies = results([r.body for r in fake.requests])
    (dialog,) = editor.dialogs
    assert "Connect to unlisted.test:80" in dialog.message
    assert "/hello?via=dialog" not in nets.registry.hits
    assert "unlisted.test:80 refused (asked: rejected)" in bodies


async def test_a_command_in_the_editors_terminal_goes_through_the_proxy_too(
    tmp_path: Path, nets: Registries
) -> None:
    """Zed runs the command itself (ACP `terminal/*`, its own environment): the argv
    carries the sandbox, the relay and the proxy variables with it."""
    box = NetBox.within(tmp_path, nets)
    client = EditorClient(answers=["reject_once"])
    with FakeLLMServer() as fake:
        fake.script(
            "*",
            calls(
                ("bash", {"command": curl("http://pypi.test/hello?via=terminal")}),
                ("bash", {"command": curl("http://unlisted.test/hello?via=terminal")}),
            ),
            Reply(text="done"),
        )
        async with spawn_agent_process(
            client, sys.executable, "-m", "loopd", "acp", env=box.env(fake.base_url), cwd=box.ws
        ) as (conn, _):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(terminal=True),
                client_info=Implementation(name="network-suite", version="0"),
            )
            session = await conn.new_session(cwd=str(box.ws), mcp_servers=[])
            await conn.prompt(
                session_id=session.session_id, prompt=[TextContentBlock(type="text", text="go")]
            )
        bodies = results([r.body for r in fake.requests])
    assert len(client.terminals) == 2  # both ran in the editor
    assert "/hello?via=terminal" in nets.registry.hits and HELLO in bodies
    assert "pypi.test:80 allowed (pypi.test)" in bodies
    assert "unlisted.test:80 refused (asked: rejected)" in bodies
