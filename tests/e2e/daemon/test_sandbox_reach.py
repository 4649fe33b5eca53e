"""A command the model runs can never drive the daemon: the daemon runs outside
every sandbox, so a command that reached its socket could open a session of its own
(with its own environment, mode and approvals) and escape. Attacked with the Unix
socket filter turned off (`[sandbox] allow_unix_sockets` lists another socket) and
the runtime dir outside `/run`, the one place a listed socket's sandbox would not
hide anyway: the daemon's folder is one of loopd's own, hidden like its store."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ClientCapabilities

from loopd.daemon.place import place_of
from loopd.policy.tiers import Tier
from loopd.sandbox.probe import probe_sandbox
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, loopd_acp, text
from tests.e2e.daemon.conftest import loopd, shared, status
from tests.unit.acp.conftest import RecordingClient

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        probe_sandbox(which=[Tier.BWRAP]).best is not Tier.BWRAP,
        reason="needs bubblewrap for the top sandbox tier (CI installs the Debian package)",
    ),
]
REACHED = "DAEMON-REACHED"


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """Outside `/tmp` (a command's `/tmp` is its own) and outside `/run`."""
    found = Path(tempfile.mkdtemp(prefix="loopd-rt-", dir="/var/tmp"))
    found.chmod(0o700)
    yield found
    shutil.rmtree(found, ignore_errors=True)


async def test_a_sandboxed_command_cannot_reach_the_daemon(
    daemon_home: Home, runtime_dir: Path
) -> None:
    home = daemon_home
    config = home.root / "config" / "loopd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[sandbox]\nallow_unix_sockets = ["{home.root}/listed.sock"]\n')
    env = {"LOOPD_DAEMON": "on", "XDG_RUNTIME_DIR": str(runtime_dir)}
    socket_path = place_of(shared(home, XDG_RUNTIME_DIR=str(runtime_dir))).endpoint
    assert socket_path.startswith(str(runtime_dir))
    attack = (
        f'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
        f"s.connect('{socket_path}'); print('{REACHED}')\"; ls -a {runtime_dir}/loopd; true"
    )
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("bash", {"command": attack}, id="b1"),)),
        Reply(text="done"),
    )
    client = RecordingClient()
    async with loopd_acp(home, client, ClientCapabilities(), env) as acp:
        sid = (await acp.new_session(cwd=str(home.work), mcp_servers=[])).session_id
        await acp.set_session_mode(session_id=sid, mode_id="full_auto")
        await acp.prompt(session_id=sid, prompt=text("go"))
        running = await status(home, XDG_RUNTIME_DIR=str(runtime_dir))
        assert running["connections"] == 1  # only the editor
    await loopd(home, "daemon", "stop", XDG_RUNTIME_DIR=str(runtime_dir))
    result = tool_result(home.fake.requests[-1].body, "b1")
    assert REACHED not in result
    assert "No such file or directory" in result  # the folder is not there for it


def tool_result(body: dict[str, Any], call_id: str) -> str:
    """What the model was told the call `call_id` printed."""
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                return json.dumps(block["content"])
    raise AssertionError(f"no result for {call_id}")
