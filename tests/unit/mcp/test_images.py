"""An image in a tool result, over a real stdio child and a real HTTP server: the
model is given it as an image, the editor is shown it as image content."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.protocol.events import ImageBlock, TextBlock
from loopd.protocol.messages import ImagePart
from loopd.testing.fake_mcp import PNG, FakeMcpHttpServer
from loopd.tools.env import ToolEnv
from tests.unit.mcp.conftest import connected, served
from tests.unit.tools.tooltest import RecordingProgress


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_image_result_reaches_the_model_and_the_editor(
    transport: str, tmp_path: Path
) -> None:
    with FakeMcpHttpServer() as web:
        config = served(transport, web)
        async with connected([config]) as servers:
            picture = next(t for t in servers.tools if t.name == "mcp__srv__picture")
            env = ToolEnv(roots=(str(tmp_path),))
            result = await picture.run({}, env, RecordingProgress())
    text = "a red dot\n[image image/png, 69 bytes, attached]"
    assert result.output == text and not result.is_error
    assert result.images == (ImagePart("image/png", PNG),)
    assert result.content == (TextBlock(text), ImageBlock(PNG, "image/png"))
