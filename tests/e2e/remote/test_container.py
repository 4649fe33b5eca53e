"""loopd in a container, the editor outside, through `--remote` (the recipe in
editors/container/). No container runtime runs here (the docker client has no
daemon), so the container is modelled by what it is to the processes inside, built
with util-linux:

- `ROOTLESS`: a user namespace with root mapped to the caller, its own mount and pid
  namespaces (a rootless podman container; docker with
  `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`): new user
  namespaces may be made inside;
- `CONFINED`: the same, with no capabilities left and no user namespace allowed
  (`max_user_namespaces` 0), which is what Docker's default seccomp profile and
  capability set leave a process (`unshare(CLONE_NEWUSER)` refused).

The network namespace is shared, as a published port shares it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import ROOT, Home, text
from tests.e2e.daemon.conftest import loopd
from tests.e2e.remote.conftest import LOOPD, remote_acp, start_server, stop_server
from tests.unit.acp.conftest import RecordingClient

ROOTLESS = [
    "unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--mount-proc",
    "--kill-child=SIGTERM",
]  # fmt: skip
NO_USERNS = 'echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --bounding-set=-all --inh-caps=-all "$@"'  # noqa: E501
CONFINED = [*ROOTLESS, "sh", "-c", NO_USERNS, "sh"]


def _works(inside: list[str]) -> bool:
    if shutil.which("unshare") is None or shutil.which("setpriv") is None:
        return False
    return subprocess.run([*inside, "true"], capture_output=True, timeout=30).returncode == 0


pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not _works(CONFINED), reason="needs unprivileged user namespaces"),
]


def _stop_inside(pid: int) -> None:
    """SIGTERM to what `unshare` runs: `loopd serve`, pid 1 of the container."""
    with open(f"/proc/{pid}/task/{pid}/children") as children:
        for child in children.read().split():
            os.kill(int(child), signal.SIGTERM)


async def doctor_inside(home: Home, inside: list[str]) -> str:
    proc = await asyncio.create_subprocess_exec(
        *inside, *LOOPD, "doctor", env=home.env(), cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return out.decode() + err.decode()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
async def test_in_a_container_that_allows_user_namespaces_bubblewrap_is_the_tier(
    home: Home,
) -> None:
    said = await doctor_inside(home, ROOTLESS)
    assert "\n  bwrap           ok:" in said, said
    assert "sandbox: bwrap" in said, said


async def test_in_a_confined_container_bubblewrap_cannot_run_and_landlock_is_the_tier(
    home: Home,
) -> None:
    said = await doctor_inside(home, CONFINED)
    assert "bwrap           unavailable" in said or "bwrap not found" in said, said
    assert "sandbox: bwrap" not in said, said
    if "landlock        ok" in said:  # the kernel has Landlock (5.13 and later)
        assert "sandbox: landlock" in said, said


async def test_loopd_serve_in_a_confined_container_serves_an_editor_outside(home: Home) -> None:
    """`loopd serve` and its daemon inside; `loopd acp --remote` outside: a turn's
    command runs inside (its pid 1 is the container's `loopd serve`), on the workspace
    the container shares, and the reply reaches the editor."""
    command = "tr '\\0' ' ' < /proc/1/cmdline > made.txt"
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("bash", {"command": command}, id="b1"),)),
        Reply(text="made it"),
    )
    server = await start_server(home, inside=CONFINED)
    try:
        zed = RecordingClient(answers=["allow_once"] * 2)  # if the policy asks
        async with remote_acp(home, server, zed) as acp:
            sid = (await acp.new_session(cwd=str(home.work), mcp_servers=[])).session_id
            done = await acp.prompt(session_id=sid, prompt=text("make a file"))
        assert done.stop_reason == "end_turn"
        assert "-m loopd serve --listen" in (home.work / "made.txt").read_text()
        assert zed.text().endswith("made it")
    finally:
        _stop_inside(server.proc.pid)  # unshare ignores SIGTERM while it waits
        await stop_server(server)
        await loopd(home, "daemon", "stop")
    said = "".join(server.stderr)
    assert "Traceback" not in said and server.token not in said, said
