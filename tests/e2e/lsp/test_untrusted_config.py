"""An untrusted workspace file that cannot be used never stops `loopd lsp`: the
session opens, the editor is told the file was ignored, and the turn runs (the
issue's instance was `loopd run`). Run again through the daemon by `make test`."""

from __future__ import annotations

import sys

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, home
from tests.e2e.acp.test_untrusted_config import BROKEN
from tests.e2e.lsp.conftest import Start, start

__all__ = ["home", "start"]

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(("text", "why"), BROKEN.values(), ids=BROKEN.keys())
async def test_an_untrusted_file_that_cannot_be_used_is_ignored_and_the_turn_runs(
    start: Start, home: Home, text: str, why: str
) -> None:
    config = home.work / ".loopd" / "config.toml"
    config.parent.mkdir()
    config.write_text(text)
    home.fake.script("*", Reply(text="ran anyway"))
    argv = ["sh", "-c", f'cd "{home.work}" && exec "{sys.executable}" -m loopd lsp']
    editor = await start({}, server=(argv, home.env()))  # started in its folder, as editors do
    new = await editor.request("loopd/session/new", {"cwd": str(home.work), "mcpServers": []})
    done = await editor.request(
        "loopd/session/prompt",
        {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "hi"}]},
    )
    assert done["stopReason"] == "end_turn"
    said = editor.texts()
    assert "ran anyway" in said
    assert f"{config} is not trusted and cannot be used ({why}" in said
    assert "was ignored" in said
    assert len(home.fake.requests) == 1
