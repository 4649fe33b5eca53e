"""Editors sharing one loopd daemon: `loopd acp` and `loopd lsp` as forwarders
(`LOOPD_DAEMON=on`), each test on its own `LOOPD_HOME` and so its own daemon,
stopped when the test ends."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.e2e.acp.conftest import ROOT, Home, home
from tests.e2e.lsp.conftest import start

__all__ = ["home", "start"]

LOOPD = [sys.executable, "-m", "loopd"]


def shared(home: Home, **extra: str) -> dict[str, str]:
    """The environment of an editor whose loopd uses the daemon."""
    return home.env(LOOPD_DAEMON="on", **extra)


async def loopd(home: Home, *args: str, **extra: str) -> tuple[int, str, str]:
    """`loopd ARGS` with the daemon on: exit code, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        *LOOPD, *args, env=shared(home, **extra), cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def status(home: Home, **extra: str) -> dict[str, Any]:
    code, out, _ = await loopd(home, "daemon", "status", "--json", **extra)
    found: dict[str, Any] = json.loads(out)
    assert found["running"] is (code == 0)
    return found


@pytest.fixture
async def daemon_home(home: Home) -> AsyncIterator[Home]:
    yield home
    await loopd(home, "daemon", "stop")


@pytest.fixture
def anyio_backend() -> Iterator[str]:
    yield "asyncio"
