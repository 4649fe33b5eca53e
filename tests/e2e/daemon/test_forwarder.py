"""The forwarder `loopd acp`/`loopd lsp` is when a daemon serves: the standard
library and a few small loopd modules, never a protocol stack, pydantic or httpx.
Checked on the real process through a whole connection (see `test_editor_start`
for the hook that dumps `sys.modules` at exit)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.e2e.acp.conftest import Home, raw_loopd
from tests.e2e.cli.test_editor_start import hooked_env, raw_lsp
from tests.e2e.daemon.conftest import status

pytestmark = pytest.mark.e2e

FORWARDER = (
    "loopd.cli",
    "loopd.daemon",
    "loopd.home",
    "loopd.protocol",
    "loopd.sdk_schema",
    "loopd.streams",
)
SPARED = ("asyncio", "argparse")
"""Standard modules a forwarder never loads either: a warm start costs the
forwarder's own start, and these two are most of it (the event loop is the
daemon's; a plain `loopd acp` goes to the daemon before the parser is built)."""


def foreign(hook: Path) -> list[str]:
    """The modules the process loaded that are neither the standard library nor
    the forwarder's own, and any of the standard library's it spares."""
    import json

    modules: list[str] = json.loads((hook / "modules.json").read_text())
    return [
        m
        for m in modules
        if m.split(".")[0] in SPARED
        or (
            m.split(".")[0] not in sys.stdlib_module_names
            and m not in ("__main__", "sitecustomize", "loopd")
            and not m.startswith(FORWARDER)
        )
    ]


async def test_the_acp_forwarder_loads_only_the_standard_library(
    daemon_home: Home, tmp_path: Path
) -> None:
    env = hooked_env(daemon_home, tmp_path / "hook") | {"LOOPD_DAEMON": "on"}
    async with raw_loopd(daemon_home, env) as agent:
        await agent.new_session(daemon_home.work)
        assert (await status(daemon_home))["connections"] == 1  # the daemon serves it
        assert agent.proc.stdin is not None
        agent.proc.stdin.close()
        assert await asyncio.wait_for(agent.proc.wait(), 30) == 0
    assert foreign(tmp_path / "hook") == []


async def test_the_lsp_forwarder_loads_only_the_standard_library(
    daemon_home: Home, tmp_path: Path
) -> None:
    env = hooked_env(daemon_home, tmp_path / "hook") | {"LOOPD_DAEMON": "on"}
    async with raw_lsp(daemon_home, env) as lsp:
        assert "capabilities" in (await lsp.initialize(daemon_home.work))["result"]
        assert (await status(daemon_home))["connections"] == 1
        assert await lsp.exit() == 0
    assert foreign(tmp_path / "hook") == []
