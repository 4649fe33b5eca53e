"""Files loopd reads again after a session opened, through `loopd acp` (the Python SDK
client as the editor): a skill swapped for a link to a key, and the workspace config
turned into a FIFO before the trust question shows it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from acp.schema import ResourceContentBlock, TextContentBlock

from loopd.testing.fake_llm import FakeLLMServer, Reply
from tests.e2e.safety.conftest import SSH_KEY, Box, acp_connection, calls, plant
from tests.unit.acp.conftest import RecordingClient
from tests.unit.fifos import released

pytestmark = pytest.mark.e2e


async def test_a_skill_swapped_for_a_link_to_a_key_never_reaches_the_model(
    tmp_path: Path,
) -> None:
    box = Box.make(tmp_path)
    skill = box.ws / ".loopd" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Ship it\n---\nSteps.\n")
    client = RecordingClient()
    with FakeLLMServer() as fake:
        fake.script("*", calls(("skill", {"name": "deploy"})), Reply(text="done"))
        async with acp_connection(box, client, fake.base_url) as conn:
            session = await conn.new_session(cwd=str(box.ws), mcp_servers=[])
            skill.unlink()  # indexed at open; swapped before the model loads it
            skill.symlink_to(box.home / ".ssh" / "id_rsa")
            result = await conn.prompt(
                session_id=session.session_id, prompt=[TextContentBlock(type="text", text="go")]
            )
        bodies = json.dumps([r.body for r in fake.requests])
    assert result.stop_reason == "end_turn"
    assert "Ship it" in bodies  # the index was offered
    assert SSH_KEY not in bodies and SSH_KEY not in json.dumps(client.updates)
    assert "leads outside" in bodies


async def test_a_fifo_in_place_of_the_config_does_not_block_the_trust_question(
    tmp_path: Path,
) -> None:
    box = Box.make(tmp_path)
    marker = plant(box)
    config = box.ws / ".loopd" / "config.toml"
    client = RecordingClient(answers=["allow_once"])
    with FakeLLMServer() as fake, released(config) as blocked:
        fake.script("*", Reply(text="hi"))
        async with acp_connection(box, client, fake.base_url) as conn:
            session = await conn.new_session(cwd=str(box.ws), mcp_servers=[])
            config.unlink()  # read at start; a FIFO when the question shows it again
            os.mkfifo(config)
            result = await conn.prompt(
                session_id=session.session_id, prompt=[TextContentBlock(type="text", text="go")]
            )
    assert blocked == [] and result.stop_reason == "end_turn"
    assert not marker.exists()  # nothing was trusted: the file is not the one read
    shown = json.dumps(client.updates)  # the bytes read at start, never the FIFO
    assert "runtimes.helper" in shown and "Trusted." not in shown


async def test_a_fifo_mentioned_in_a_prompt_is_not_read(tmp_path: Path) -> None:
    """An editor's @-mention of a workspace file arrives as a link: loopd reads it in
    through the one reader, which refuses a FIFO without blocking on it, and says so
    by its uri (the model may `read` it too, which refuses it the same way)."""
    box = Box.make(tmp_path)
    pipe = box.ws / "notes.fifo"
    os.mkfifo(pipe)
    client = RecordingClient()
    link = ResourceContentBlock(type="resource_link", uri=pipe.as_uri(), name="notes.fifo")
    with FakeLLMServer() as fake, released(pipe) as blocked:
        fake.script("*", calls(("read", {"path": "notes.fifo"})), Reply(text="done"))
        async with acp_connection(box, client, fake.base_url) as conn:
            session = await conn.new_session(cwd=str(box.ws), mcp_servers=[])
            result = await conn.prompt(
                session_id=session.session_id,
                prompt=[TextContentBlock(type="text", text="see"), link],
            )
        bodies = json.dumps([r.body for r in fake.requests])
    assert blocked == [] and result.stop_reason == "end_turn"
    assert pipe.as_uri() in bodies and "not a regular file" in bodies
