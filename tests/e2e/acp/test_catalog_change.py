"""Through `loopd acp`: a session loaded in a new process after its runtime's entry
changed in the configuration is told so, by name of what changed, as a note."""

from __future__ import annotations

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, loopd_acp, text
from tests.unit.acp.conftest import RecordingClient

CONFIG = """
[defaults]
runtime = "anthropic"

[providers.anthropic]
kind = "anthropic"
api_key_env = "ANTHROPIC_API_KEY"
base_url = "{base_url}"
models = {models}
"""


def configure(home: Home, models: str) -> None:
    path = home.root / "config" / "loopd" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CONFIG.format(models=models, base_url=home.fake.base_url))


def catalog_notes(client: RecordingClient) -> list[dict[str, object]]:
    return [
        u
        for u in client.of("agent_message_chunk")
        if u.get("_meta", {}).get("loopd", {}).get("catalogChanged")
    ]


async def test_a_session_loaded_after_its_entry_changed_is_told(home: Home) -> None:
    configure(home, '["claude-sonnet-4-5"]')
    async with loopd_acp(home, RecordingClient()) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])

    unchanged = RecordingClient()
    async with loopd_acp(home, unchanged) as conn:
        await conn.load_session(cwd=str(home.work), session_id=new.session_id, mcp_servers=[])
    assert catalog_notes(unchanged) == []

    configure(home, '["claude-sonnet-4-5", "claude-opus-4-1"]')
    client = RecordingClient()
    async with loopd_acp(home, client) as conn:
        await conn.load_session(cwd=str(home.work), session_id=new.session_id, mcp_servers=[])
    [note] = catalog_notes(client)
    assert note["_meta"] == {"loopd/notice": "note", "loopd": {"catalogChanged": ["models"]}}
    assert "`anthropic` runtime changed in the catalog" in client.text()


async def test_a_thought_level_with_a_target_sends_the_target(home: Home) -> None:
    """`targets = { high = ... }`: at that level the provider is sent the target id;
    at another level, the model's own id."""
    configure(home, '[{ id = "claude-sonnet-4-5", targets = { high = "claude-sonnet-4-5-deep" } }]')
    home.fake.script("*", Reply(text="deep"), Reply(text="plain"))
    async with loopd_acp(home, RecordingClient()) as conn:
        new = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        sid = new.session_id
        await conn.set_config_option(config_id="thought_level", session_id=sid, value="high")
        await conn.prompt(session_id=sid, prompt=text("think hard"))
        await conn.set_config_option(config_id="thought_level", session_id=sid, value="off")
        await conn.prompt(session_id=sid, prompt=text("and now?"))
    assert [r.body["model"] for r in home.fake.requests] == [
        "claude-sonnet-4-5-deep",
        "claude-sonnet-4-5",
    ]
