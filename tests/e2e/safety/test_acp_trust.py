"""Workspace trust through `loopd acp` (the Python SDK client as the editor): a
planted `.loopd/config.toml` names a command; until the person trusts the folder
nothing it names runs. The question comes as the first turn's permission request; a
no keeps the file inert, a yes applies it to the sessions opened afterwards."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp.schema import TextContentBlock

from loopd.testing.fake_llm import FakeLLMServer, Reply
from tests.e2e.safety.conftest import Box, acp_connection, plant, trusted_folders
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e


async def acp_turns(box: Box, client: RecordingClient, sessions: int) -> list[list[str]]:
    """Open `sessions` sessions one after the other, one prompt each; the runtime
    names each offered when it opened."""
    offered: list[list[str]] = []
    with FakeLLMServer() as fake:
        fake.script("*", *[Reply(text="hi")] * sessions)
        async with acp_connection(box, client, fake.base_url) as conn:
            for _ in range(sessions):
                session = await conn.new_session(cwd=str(box.ws), mcp_servers=[])
                runtime = next(o for o in session.config_options or [] if o.id == "runtime")
                offered.append([c.value for c in runtime.options])  # type: ignore[union-attr]
                result = await conn.prompt(
                    session_id=session.session_id,
                    prompt=[TextContentBlock(type="text", text="go")],
                )
                assert result.stop_reason == "end_turn"
    return offered


async def test_acp_asks_once_and_a_no_keeps_the_file_inert(tmp_path: Path) -> None:
    box = Box.make(tmp_path)
    marker = plant(box)
    client = RecordingClient(answers=["reject_once"])
    offered = await acp_turns(box, client, sessions=2)
    assert not marker.exists()
    assert trusted_folders(box) == {}
    ((asked, _),) = client.permissions  # asked once, not again for the second session
    assert asked.title == f"Trust the settings in {box.ws / '.loopd' / 'config.toml'}?"
    shown = json.dumps(client.updates)
    assert "runtimes.helper, providers.collector, approvals.allow" in shown
    assert "outside the sandbox" in shown  # what trusting means is said
    assert client.text().count("is not trusted, so these of its settings were ignored") == 1
    assert all("helper" not in names for names in offered)


async def test_acp_a_yes_trusts_exactly_that_file_and_new_sessions_use_it(
    tmp_path: Path,
) -> None:
    box = Box.make(tmp_path)
    marker = plant(box)
    client = RecordingClient(answers=["allow_once"])
    offered = await acp_turns(box, client, sessions=2)
    assert str(box.ws) in trusted_folders(box)
    assert marker.exists()  # trusted: the catalog was rebuilt, its command asked --version
    assert "helper" not in offered[0] and "helper" in offered[1]
    assert "Trusted. Sessions opened from now on use these settings" in json.dumps(client.updates)


async def test_acp_trust_given_in_a_terminal_meanwhile_applies_without_asking(
    tmp_path: Path,
) -> None:
    box = Box.make(tmp_path)
    marker = plant(box)
    client = RecordingClient()
    with FakeLLMServer() as fake:
        fake.script("*", Reply(text="hi"))
        async with acp_connection(box, client, fake.base_url) as conn:
            first = await conn.new_session(cwd=str(box.ws), mcp_servers=[])
            trusting = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "loopd",
                "trust",
                cwd=box.ws,
                env=box.env(fake.base_url),
                stdout=asyncio.subprocess.DEVNULL,
            )
            assert await trusting.wait() == 0
            assert not marker.exists()  # trusting runs nothing; loopd acp's reload does
            await conn.prompt(
                session_id=first.session_id, prompt=[TextContentBlock(type="text", text="go")]
            )
            second = await conn.new_session(cwd=str(box.ws), mcp_servers=[])
    assert client.permissions == []
    assert "is not trusted" not in client.text()
    runtime = next(o for o in second.config_options or [] if o.id == "runtime")
    assert "helper" in [c.value for c in runtime.options]  # type: ignore[union-attr]
    assert marker.exists()  # loopd acp rebuilt its catalog
