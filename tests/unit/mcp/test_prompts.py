"""A server's prompts as slash commands, over a real stdio child and a real HTTP
server: listed under namespaced names with their arguments as the hint, filled in
from the words after the command, refused when a required argument is missing."""

from __future__ import annotations

import pytest

from loopd.mcp import McpError
from loopd.protocol.events import Command, EmbeddedResourceBlock, FilledPrompt, TextBlock
from loopd.testing.fake_mcp import FakeMcpHttpServer
from tests.unit.mcp.conftest import connected, served, stdio


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_prompts_are_commands_filled_in_by_the_server(transport: str) -> None:
    with FakeMcpHttpServer() as web:
        config = served(transport, web)
        async with connected([config]) as servers:
            commands = [p.command for p in servers.prompts]
            review, hello = servers.prompts
            filled = await review.expand("src/a.py error handling")
            first_only = await review.expand("b.py")
            greeting = await hello.expand("words are ignored")
    assert commands == [
        Command("mcp__srv__review", "Review a file. (MCP: srv)", "file [focus]"),
        Command("mcp__srv__hello", "Say hello. (MCP: srv)"),
    ]
    assert filled == FilledPrompt(
        (
            TextBlock("Review src/a.py, focusing on error handling."),
            EmbeddedResourceBlock("file:///src/a.py", "print(1)\n"),
        )
    )
    assert first_only.blocks[0] == TextBlock("Review b.py, focusing on everything.")
    assert greeting == FilledPrompt((TextBlock("Hello!"),))


async def test_a_missing_required_argument_is_refused_with_the_usage() -> None:
    async with connected([stdio("srv")]) as servers:
        review = servers.prompts[0]
        with pytest.raises(McpError, match=r"^/mcp__srv__review needs file: "):
            await review.expand("   ")
