"""A server's resources as @-mentionable context, over a real stdio child and a real
HTTP server: listed page by page when the server declares them, read into a prompt
by the exact uri it listed (text embedded, an image as an image, other blobs named,
text cut at the cap), never read when not listed, and listed again when the server
says its list changed."""

from __future__ import annotations

import pytest

from loopd.mcp import McpServers
from loopd.mcp.resources import MAX_MENTIONS, TEXT_LIMIT
from loopd.protocol.events import (
    EmbeddedResourceBlock,
    ImageBlock,
    Prompt,
    ResourceLinkBlock,
    TextBlock,
)
from loopd.protocol.mentions import mention_to_wire
from loopd.protocol.wire.shapes import Mention
from loopd.testing.fake_mcp import BIG, NOTE, PNG, FakeMcpHttpServer
from loopd.tools.env import ToolEnv
from tests.unit.mcp.conftest import connected, served, stdio
from tests.unit.tools.tooltest import RecordingProgress


def link(uri: str, name: str = "it") -> ResourceLinkBlock:
    return ResourceLinkBlock(uri, name)


def methods(web: FakeMcpHttpServer) -> list[str]:
    return [m for m, _ in web.requests]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_every_page_of_resources_is_mentionable(transport: str) -> None:
    with FakeMcpHttpServer() as web:
        async with connected([served(transport, web)]) as servers:
            mentions = servers.mentions()
            problems = servers.problems
    assert problems == ()
    assert [m.uri for m in mentions] == [
        "mem://notes/readme",
        "mem://images/dot.png",
        "mem://data/blob.bin",
        "mem://notes/big",
    ]
    assert mentions[0] == Mention(
        server="srv",
        uri="mem://notes/readme",
        name="readme",
        title="The readme",
        description="What the project is about.",
        mime_type="text/plain",
    )
    assert mention_to_wire(mentions[1]) == {
        "server": "srv",
        "uri": "mem://images/dot.png",
        "name": "dot",
        "mimeType": "image/png",
    }


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_mentioned_resources_are_read_into_the_prompt(transport: str) -> None:
    prompt = Prompt(
        (
            TextBlock("look at these"),
            link("mem://notes/readme"),
            link("mem://images/dot.png"),
            link("mem://data/blob.bin"),
            link("file:///etc/passwd", "passwd"),
        )
    )
    with FakeMcpHttpServer() as web:
        async with connected([served(transport, web)]) as servers:
            resolved = await servers.resolve(prompt)
    assert resolved.blocks == (
        TextBlock("look at these"),
        EmbeddedResourceBlock("mem://notes/readme", NOTE, "text/plain"),
        ImageBlock(PNG, "image/png", "mem://images/dot.png"),
        TextBlock(
            "[binary resource mem://data/blob.bin (application/octet-stream, 8 bytes), not shown]"
        ),
        link("file:///etc/passwd", "passwd"),  # not offered: left as it is, not fetched
    )


async def test_a_uri_no_server_listed_is_never_read() -> None:
    """The fake would answer `mem://hidden/secret`: only the listing decides."""
    near_misses = (
        "mem://hidden/secret",
        "mem://notes/readme/../../hidden/secret",
        "MEM://notes/readme",
        "mem://notes/readme ",
        "mem://notes/readm",
    )
    prompt = Prompt(tuple(link(uri) for uri in near_misses))
    with FakeMcpHttpServer() as web:
        async with connected([served("http", web)]) as servers:
            resolved = await servers.resolve(prompt)
        assert "resources/read" not in methods(web)
        assert web.fake.read == []
    assert resolved == prompt


async def test_a_long_text_is_cut_at_the_cap() -> None:
    async with connected([stdio("srv")]) as servers:
        resolved = await servers.resolve(Prompt((link("mem://notes/big"),)))
    [block] = resolved.blocks
    assert isinstance(block, EmbeddedResourceBlock)
    assert block.text.startswith(BIG[:TEXT_LIMIT])
    assert block.text.endswith(f"\n[... cut: {TEXT_LIMIT} of {len(BIG)} characters shown]")


async def test_mentions_past_the_bound_stay_links() -> None:
    many = Prompt(tuple(link("mem://notes/readme") for _ in range(MAX_MENTIONS + 3)))
    with FakeMcpHttpServer() as web:
        async with connected([served("http", web)]) as servers:
            resolved = await servers.resolve(many)
        reads = web.fake.read
    assert len(reads) == MAX_MENTIONS
    assert all(isinstance(b, EmbeddedResourceBlock) for b in resolved.blocks[:MAX_MENTIONS])
    assert resolved.blocks[MAX_MENTIONS:] == many.blocks[MAX_MENTIONS:]


async def test_a_read_that_fails_is_said_in_the_prompt() -> None:
    with FakeMcpHttpServer() as web:
        async with connected([served("http", web)]) as servers:
            web.forgetful = True  # every request now 404s, the new handshake too
            resolved = await servers.resolve(Prompt((link("mem://notes/readme"),)))
    [block] = resolved.blocks
    assert isinstance(block, TextBlock)
    assert block.text.startswith("[The resource mem://notes/readme of MCP server srv could not")


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_server_without_the_capability_is_not_asked(transport: str) -> None:
    with FakeMcpHttpServer(resources=False) as web:
        config = served(transport, web, "--no-resources")
        async with connected([config]) as servers:
            resolved = await servers.resolve(Prompt((link("mem://notes/readme"),)))
            mentions, problems = servers.mentions(), servers.problems
    assert mentions == () and problems == ()  # asking would have failed: a problem
    assert resolved.blocks == (link("mem://notes/readme"),)
    if transport == "http":
        assert not any(m.startswith("resources/") for m in methods(web))


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_changed_resource_list_is_mentionable_and_read(transport: str) -> None:
    with FakeMcpHttpServer() as web:
        async with connected([served(transport, web), stdio("other")]) as servers:
            before = [m.uri for m in servers.mentions()]
            publish = next(t for t in servers.tools if t.name == "mcp__srv__publish")
            env = ToolEnv(roots=("/",))
            said = await publish.run({}, env, RecordingProgress())
            resolved = await servers.resolve(Prompt((link("mem://notes/late"),)))
            after = [(m.server, m.uri) for m in servers.mentions()]
    assert said.output == "published"
    assert "mem://notes/late" not in before
    assert after[:5] == [("srv", u) for u in (*before[:4], "mem://notes/late")]
    assert [s for s, _ in after[5:]] == ["other"] * 4  # servers keep their order
    assert resolved.blocks == (
        EmbeddedResourceBlock("mem://notes/late", "Published later: MANGO\n", "text/plain"),
    )


async def test_a_resource_the_server_no_longer_lists_is_no_longer_read() -> None:
    """The fake still serves it: only the current listing decides."""
    with FakeMcpHttpServer() as web:
        async with connected([served("http", web)]) as servers:
            retract = next(t for t in servers.tools if t.name == "mcp__srv__retract")
            await retract.run({}, ToolEnv(roots=("/",)), RecordingProgress())
            resolved = await servers.resolve(Prompt((link("mem://notes/readme"),)))
            listed = [m.uri for m in servers.mentions()]
        reads = web.fake.read
    assert "mem://notes/readme" not in listed and listed
    assert resolved.blocks == (link("mem://notes/readme"),)
    assert reads == []


def test_no_servers_offer_no_mentions() -> None:
    assert McpServers().mentions() == ()
