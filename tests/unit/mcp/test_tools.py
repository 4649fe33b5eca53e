"""Names the model calls MCP tools by, names refused because they are taken, and
the text a call's result becomes."""

from __future__ import annotations

import pytest

from loopd.mcp.client import CallOutcome
from loopd.mcp.tools import IMAGE_LIMIT, result_images, result_text, tool_name
from loopd.protocol.messages import ImagePart
from tests.unit.mcp.conftest import BUILTIN, connected, stdio


@pytest.mark.parametrize(
    ("server", "tool", "name"),
    [
        ("github", "create_issue", "mcp__github__create_issue"),
        ("My Server", "do.it/now", "mcp__My_Server__do_it_now"),
        ("ünï", "tool-1", "mcp___n___tool-1"),
    ],
)
def test_names_are_namespaced_in_the_provider_safe_charset(
    server: str, tool: str, name: str
) -> None:
    assert tool_name(server, tool) == name


def test_long_names_are_cut_to_64_and_stay_apart() -> None:
    one, two = tool_name("s" * 40, "t" * 40 + "1"), tool_name("s" * 40, "t" * 40 + "2")
    assert len(one) == len(two) == 64
    assert one != two and one.startswith("mcp__sss")


async def test_a_name_a_built_in_tool_has_is_refused_and_never_shadows_it() -> None:
    async with connected([stdio("fake")], reserved=(*BUILTIN, "mcp__fake__echo")) as servers:
        names = [t.name for t in servers.tools]
    assert "mcp__fake__echo" not in names and "mcp__fake__fail" in names
    assert servers.problems == (
        "fake: tool 'echo' is not offered: a built-in tool is named mcp__fake__echo",
    )


async def test_servers_whose_names_collide_keep_the_first_ones_tools() -> None:
    async with connected([stdio("my.srv"), stdio("my srv"), stdio("my.srv")]) as servers:
        owners = {t.client.name for t in servers.tools}
        problems = servers.problems
        report = servers.report()
    assert owners == {"my.srv"}
    assert problems[0] == "my.srv: another server has this name; not started"
    assert problems[1] == (
        "my srv: tool 'echo' is not offered: another MCP tool is named mcp__my_srv__echo"
    )
    assert len(problems) == 10  # the duplicate server, then each of the nine tools
    assert report.startswith("Some MCP servers or tools are not available in this session:\n- ")


@pytest.mark.parametrize(
    ("outcome", "text"),
    [
        (CallOutcome(({"type": "text", "text": "a"}, {"type": "text", "text": "b"})), "a\nb"),
        (CallOutcome(structured={"n": 1}), '{"n": 1}'),
        (CallOutcome((), is_error=True), "The tool reported an error without details."),
        (CallOutcome(()), "(no output)"),
        (
            CallOutcome(({"type": "image", "data": "AAAA", "mimeType": "image/png"},)),
            "[image image/png, 3 bytes, attached]",
        ),
        (
            CallOutcome(({"type": "image", "data": "AAAA", "mimeType": "image/svg+xml"},)),
            "[image image/svg+xml, 3 bytes, not shown]",
        ),
        (
            CallOutcome(({"type": "image", "data": "A*AA", "mimeType": "image/png"},)),
            "[image image/png, 3 bytes, not shown]",
        ),
        (
            CallOutcome(({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},)),
            "[audio audio/wav, 3 bytes, not shown]",
        ),
        (
            CallOutcome(({"type": "resource_link", "uri": "file:///a", "name": "a"},)),
            "[resource file:///a a]",
        ),
        (
            CallOutcome(({"type": "resource", "resource": {"uri": "x:1", "text": "body"}},)),
            "body",
        ),
        (
            CallOutcome(({"type": "resource", "resource": {"uri": "x:2", "blob": "AA=="}},)),
            "[binary resource x:2, not shown]",
        ),
    ],
)
def test_results_become_text_for_the_model(outcome: CallOutcome, text: str) -> None:
    assert result_text(outcome) == text


def test_only_images_a_provider_accepts_are_given_to_the_model() -> None:
    big = "A" * (IMAGE_LIMIT * 4 // 3 + 8)
    blocks = (
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "image", "data": "BBBB", "mimeType": "image/svg+xml"},  # not a type they take
        {"type": "image", "data": "not base64!", "mimeType": "image/png"},
        {"type": "image", "data": big, "mimeType": "image/jpeg"},  # over 5 MB
        {"type": "image", "mimeType": "image/png"},  # no data
        {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        {"type": "image", "data": "CCCC", "mimeType": "image/webp"},
    )
    images = result_images(CallOutcome(blocks))
    assert images == (ImagePart("image/png", "AAAA"), ImagePart("image/webp", "CCCC"))
