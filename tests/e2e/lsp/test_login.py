"""`loopd lsp` with no credentials: `loopd.login` says what to run and, once a login
is stored, finds it without a restart, as does the next new session."""

from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types

from loopd.config.login import Login, write_login
from loopd.testing.fake_llm import FakeLLMServer
from tests.e2e.conftest import serving
from tests.e2e.lsp.conftest import ROOT, Start, until


async def test_login_is_found_without_a_restart(start: Start, tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LOOPD_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT / "server"),
        **serving(),
    }
    with FakeLLMServer() as fake:
        editor = await start(
            {}, profile="plain", server=([sys.executable, "-m", "loopd", "lsp"], env)
        )
        assert await editor.command("loopd.login") == {
            "loggedIn": False,
            "command": ["loopd", "login"],
        }
        await until(lambda: editor.client.messages)
        [shown] = editor.client.messages
        assert shown.type == types.MessageType.Warning
        assert "loopd login" in shown.message

        stored = Login({"OPENAI_BASE_URL": fake.openai_base_url}, {"runtime": "openai"})
        write_login(tmp_path / "data", stored)  # what `loopd login` leaves behind
        assert (await editor.command("loopd.login"))["loggedIn"] is True
        created = await editor.command("loopd.newSession", {"cwd": str(tmp_path)})
        assert created["sessionId"].startswith("sess_")
