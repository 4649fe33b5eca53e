"""Fixtures for the real sandbox runs."""

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".env").write_text("API_TOKEN=hunter2\n")
    (ws / "src").mkdir()
    return ws.resolve()


@pytest.fixture
def outside() -> Iterator[Path]:
    """A host folder outside the roots and outside /tmp (which Landlock leaves writable)."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="loopd-outside-", dir=base)).resolve()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on loopback, outside any sandbox."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]
