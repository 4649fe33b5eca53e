"""What a command cannot see or reach, attacked from inside a real bwrap command through
both `loopd run` and `loopd acp`: secrets deep in the tree, past an exhausted scan
limit and in folders a scan would skip; the projects next to the workspace; credential
files in the home directory that no list names; loopd's own store and config; and a
Unix socket server outside `/tmp`.

The world lives under `/var/tmp`, not `/tmp`: a command's `/tmp` is a private tmpfs,
so anything under the real `/tmp` would be out of sight for that reason alone.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from loopd.policy.tiers import Tier
from loopd.sandbox.probe import probe_sandbox
from loopd.testing.fake_llm import Reply
from tests.e2e.safety.conftest import FAKE_KEY, Box, calls, loopd_acp, loopd_run
from tests.unit.acp.conftest import RecordingClient

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        probe_sandbox(which=[Tier.BWRAP]).best is not Tier.BWRAP,
        reason="needs bubblewrap for the top sandbox tier (CI installs the Debian package)",
    ),
]

FILLER = 20_500  # more entries than the old scan looked at before giving up
CANARIES = {
    "deep": "DEEP-s3cret-0a",  # a .env twelve folders down
    "late": "LATE-s3cret-0b",  # a .env below a folder the walk reaches after FILLER entries
    "skipped": "NMOD-s3cret-0c",  # a .env inside node_modules
    "sibling": "SIBLING-s3cret-0d",  # a project next to the workspace
    "sibling_notes": "SIBLING-notes-0e",  # not a secret by name, but not ours either
    "aws": "AWS-s3cret-0f",  # ~/.aws/credentials
    "unlisted": "HOME-token-10",  # ~/.my_token: no list names it
    "gh": "GH-token-11",  # ~/.config/gh/hosts.yml
    "store": "STORE-canary-12",  # said in the prompt, so it is in sessions.db
}
SOCKET_REACHED = "UNIX-SOCKET-REACHED"


@dataclass
class World:
    box: Box
    socket_path: Path
    accepted: list[bytes] = field(default_factory=list)

    def attack(self) -> str:
        base, ws = self.box.base, self.box.ws
        deep = "/".join("abcdefghijkl")
        return "; ".join(
            [
                "cat ~/.aws/credentials ~/.my_token ~/.config/gh/hosts.yml",
                f"cat {deep}/.env zzz/later/.env node_modules/pkg/.env",
                "ls -a .. ~",
                "cat ../sibling/.env ../sibling/notes.txt",
                f"cat {base}/data/* {base}/config/loopd/config.toml | strings",
                f"ls -a {base}/data {base}/config",
                f'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
                f"s.connect('{self.socket_path}'); s.sendall(b'hi'); print('{SOCKET_REACHED}')\"",
                f"echo workspace-is-{ws.name}",
                "true",
            ]
        )


def build(base: Path) -> World:
    proj = base / "home" / "proj"
    ws, home = proj / "ws", base / "home"
    box = Box(base, ws, base / "outside", home)
    for d in (ws / ".git" / "hooks", box.outside, home / ".ssh", home / ".aws", base / "sock"):
        d.mkdir(parents=True)
    files = {
        ws / ".env": "TOKEN=dotenv-s3cret-41",
        ws / "notes.txt": "hello",
        ws / "/".join("abcdefghijkl") / ".env": CANARIES["deep"],
        ws / "zzz" / "later" / ".env": CANARIES["late"],
        ws / "node_modules" / "pkg" / ".env": CANARIES["skipped"],
        proj / "sibling" / ".env": CANARIES["sibling"],
        proj / "sibling" / "notes.txt": CANARIES["sibling_notes"],
        home / ".aws" / "credentials": CANARIES["aws"],
        home / ".my_token": CANARIES["unlisted"],
        home / ".config" / "gh" / "hosts.yml": CANARIES["gh"],
        base / "config" / "loopd" / "config.toml": "[limits]\nmax_iterations = 25\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    filler = ws / "aaa"
    filler.mkdir()
    (filler / "f").touch()
    for i in range(FILLER):  # hard links: entries without inodes, quick to make
        os.link(filler / "f", filler / f"f{i}")
    return World(box, base / "sock" / "s.sock")


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    """One world for both frontends (building it is most of the cost)."""
    base = Path(tempfile.mkdtemp(prefix="loopd-hidden-", dir="/var/tmp"))
    try:
        found = build(base)
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(found.socket_path))
        server.listen(4)

        def serve() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                found.accepted.append(conn.recv(16))
                conn.close()

        threading.Thread(target=serve, daemon=True).start()
        yield found
        server.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def assert_nothing_reached(world: World, *seen: str) -> None:
    text = "\n".join(seen)
    assert f"workspace-is-{world.box.ws.name}" in text  # the attack did run
    for name, canary in CANARIES.items():
        assert canary not in text, name
    assert SOCKET_REACHED not in text
    assert "Operation not permitted" in text  # socket(AF_UNIX) refused
    assert world.accepted == []
    assert FAKE_KEY not in text


def store_text(world: World) -> str:
    db = sqlite3.connect(world.box.base / "data" / "sessions.db")
    try:
        return json.dumps([list(map(str, row)) for row in db.execute("SELECT * FROM events")])
    finally:
        db.close()


async def test_through_loopd_run(world: World) -> None:
    script = [calls(("bash", {"command": world.attack()})), Reply(text="done")]
    run = await loopd_run(
        world.box, script, "--mode", "full_auto", prompt=f"go {CANARIES['store']}"
    )
    assert run.code == 0, run.err
    assert len(run.tool_results()) == 1
    shown = [json.dumps(u) for u in run.updates() if u.get("sessionUpdate") == "tool_call_update"]
    assert_nothing_reached(world, *run.tool_results(), *shown)


async def test_through_loopd_acp(world: World) -> None:
    client = RecordingClient()
    script = [calls(("bash", {"command": world.attack()})), Reply(text="done")]
    prompt = f"go {CANARIES['store']}"
    run = await loopd_acp(world.box, client, script, mode="full_auto", prompt=prompt)
    bodies = run.bodies
    assert CANARIES["store"] in store_text(world)  # the store does hold it...
    shown = json.dumps(client.of("tool_call_update"))
    assert_nothing_reached(world, shown)  # ...and no command could read it
    for canary in CANARIES.values():
        assert canary not in bodies.replace(f"go {CANARIES['store']}", "")
