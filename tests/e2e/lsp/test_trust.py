"""Workspace trust through the real `loopd lsp`: the first turn's question comes as a
`window/showMessageRequest` dialog, and `loopd.trust` / `loopd.untrust` are what the
VS Code extension calls on VS Code's own Workspace Trust."""

from __future__ import annotations

import sys
from pathlib import Path

from loopd.testing.fake_llm import FakeLLMServer, Reply
from tests.e2e.lsp.conftest import Start, until
from tests.e2e.safety.conftest import Box, plant, trusted_folders


async def test_lsp_trust_command_and_dialog(
    start: Start, tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    box = Box.make(tmp_path / "box")
    marker = plant(box)
    fake_llm.script("*", Reply(text="hi"))
    env = box.env(fake_llm.base_url)
    argv = ["sh", "-c", f'cd "{box.ws}" && exec "{sys.executable}" -m loopd lsp']
    editor = await start({}, profile="plain", server=(argv, env))
    assert editor.server is not None
    provider = editor.server.capabilities.execute_command_provider
    assert provider is not None and "loopd.trust" in (provider.commands or [])
    editor.answers.append("Reject")
    await editor.command("loopd.ask", {"prompt": "hello"})
    await until(lambda: editor.dialogs, within=30)
    assert "Trust the settings in" in editor.dialogs[0].message
    assert "runtimes.helper, providers.collector, approvals.allow" in editor.dialogs[0].message
    assert not marker.exists() and trusted_folders(box) == {}

    done = await editor.command("loopd.trust")
    assert done == {"folder": str(box.ws), "trusted": True}
    assert str(box.ws) in trusted_folders(box) and marker.exists()
    undone = await editor.command("loopd.untrust", {"folder": str(box.ws)})
    assert undone == {"folder": str(box.ws), "withdrawn": True}
    assert trusted_folders(box) == {}
