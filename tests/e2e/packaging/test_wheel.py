"""The package as the ACP registry runs it: a wheel built from this checkout, launched
with `uvx` in an empty home with no credentials, as the registry's CI does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.packaging.installs import find_uv, uv_settings

ENTRY = ROOT / "registry" / "loopd" / "agent.json"

pytestmark = pytest.mark.e2e


def _registry_env(tmp: Path) -> dict[str, str]:
    """The test process's environment with HOME replaced, as the registry's check
    does, less anything that would make loopd work without a login: provider keys
    and endpoints, loopd's own settings, this checkout on PYTHONPATH."""
    dropped = ("ANTHROPIC_", "OPENAI_", "OLLAMA_", "LOOPD_", "XDG_", "PYTHON", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    home = {"HOME": str(tmp), "LOOPD_HOME": str(tmp / "data"), "TERM": "dumb"}
    return env | uv_settings() | home | {"UV_PYTHON": sys.executable}


def test_the_registry_entry_launched_as_uvx_offers_login_and_answers_auth_required(
    wheel: Path, tmp_path: Path
) -> None:
    initialize = {
        "protocolVersion": 1,
        "clientInfo": {"name": "registry-check", "version": "1"},
        "clientCapabilities": {"terminal": True, "_meta": {"terminal-auth": True}},
    }
    calls = [("initialize", initialize), ("session/new", {"cwd": str(tmp_path), "mcpServers": []})]
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        for i, (method, params) in enumerate(calls, 1)
    ]
    uvx = json.loads(ENTRY.read_text())["distribution"]["uvx"]
    proc = subprocess.Popen(  # `uvx PACKAGE ARGS`, finding the package in the build
        [find_uv(), "tool", "run", "--isolated", "--find-links", str(wheel.parent), uvx["package"]]
        + uvx["args"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_registry_env(tmp_path),
        cwd=tmp_path,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        answers = [_ask(proc, line) for line in lines]
        proc.stdin.close()  # the client goes away: loopd ends
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    [method] = answers[0]["result"]["authMethods"]
    assert (method["type"], method["args"]) == ("terminal", ["login"])
    assert answers[1]["error"]["code"] == -32000
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "Warning" not in stderr, stderr


def _ask(proc: subprocess.Popen[str], line: str) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def test_the_wheel_carries_complete_metadata(wheel: Path) -> None:
    name, version = wheel.name.split("-")[:2]  # loopd_agent, 0.1.0
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"{name}-{version}.dist-info/METADATA").decode()
        names = archive.namelist()
    wanted = ("License-Expression: MIT", "Project-URL: Source", "Classifier: ", "Requires-Python")
    for field in wanted:
        assert field in metadata
    assert "# loopd" in metadata  # the README is the long description
    assert "loopd/py.typed" in names
    assert "Name: loopd-agent" in metadata  # "loopd" on PyPI is another project


def test_one_version_everywhere(wheel: Path) -> None:
    """The wheel's metadata, the source (`loopd --version`, ACP `agentInfo`, LSP
    `serverInfo` all say `loopd.__version__`: test_installed checks them in each
    venv), the registry entry and its pin, and the VS Code extension agree."""
    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        fields = archive.read(metadata).decode().split("\n\n", 1)[0].splitlines()
    [version] = [line.removeprefix("Version: ") for line in fields if line.startswith("Version: ")]
    entry = json.loads(ENTRY.read_text())
    extension = json.loads((ROOT / "vscode-extension" / "package.json").read_text())
    source = (ROOT / "server" / "loopd" / "__init__.py").read_text()
    assert f'__version__ = "{version}"' in source
    assert entry["version"] == version
    assert entry["distribution"]["uvx"]["package"] == f"loopd-agent=={version}"
    assert extension["version"] == version
