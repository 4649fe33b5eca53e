"""Input that used to crash `loopd acp` or go unanswered, served in-process and by
the daemon (through the forwarder): JSON nested thousands deep is a parse error and
the connection lives on; requests already written when stdin closes are answered."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, raw_loopd

pytestmark = pytest.mark.e2e

LOOPD = [sys.executable, "-m", "loopd"]
DEEP = {
    "array": "[" * 100_000 + "]" * 100_000,
    "object": '{"a":' * 50_000 + "1" + "}" * 50_000,
}


@pytest.fixture(params=["off", "on"], ids=["in-process", "daemon"])
def serving(request: pytest.FixtureRequest, home: Home) -> Iterator[dict[str, str]]:
    """The environment of `loopd acp` served in-process or by the daemon."""
    env = home.env(LOOPD_DAEMON=request.param)
    yield env
    if request.param == "on":
        subprocess.run([*LOOPD, "daemon", "stop"], env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize("shape", sorted(DEEP))
async def test_json_nested_thousands_deep_is_a_parse_error_and_the_server_lives(
    home: Home, serving: dict[str, str], shape: str
) -> None:
    async with raw_loopd(home, serving) as agent:
        await agent.initialized()
        message = f'{{"jsonrpc":"2.0","id":7,"method":"session/new","params":{DEEP[shape]}}}'
        await agent.send_line(message)
        alive, before = await agent.request("session/list", {})
        assert alive["result"] == {"sessions": []}
        assert [m["error"]["code"] for m in before] == [-32700]
        assert "deep" in before[0]["error"]["message"]
        assert agent.proc.returncode is None


def _line(rid: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def test_requests_written_before_stdin_closes_are_answered(
    home: Home, serving: dict[str, str]
) -> None:
    """`printf 'initialize…\\nsession/new…\\n' | loopd acp`: stdin is a pipe that ends
    right after the requests; each is answered before the process exits."""
    new = {"cwd": str(home.work), "mcpServers": []}
    given = "\n".join(
        [
            _line(1, "initialize", {"protocolVersion": 1}),
            _line(2, "session/new", new),
            _line(3, "session/list", {}),
        ]
    )
    done = subprocess.run(
        [*LOOPD, "acp"], input=given + "\n", capture_output=True, text=True,
        env=serving, cwd=home.work, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines()) if "id" in m}
    assert set(answers) == {1, 2, 3}, done.stdout
    assert answers[2]["result"]["sessionId"]


def test_a_deep_first_line_while_the_daemon_starts_is_a_parse_error(home: Home) -> None:
    """The forwarder reads the editor's first line itself while a daemon starts (to
    answer `initialize` from a recorded answer): JSON nested thousands deep there
    used to raise RecursionError in the forwarder, which died without a word."""
    env = home.env(LOOPD_DAEMON="on")
    init = _line(1, "initialize", {"protocolVersion": 1})
    stop = [*LOOPD, "daemon", "stop"]
    try:
        first = subprocess.run(
            [*LOOPD, "acp"], input=init + "\n", capture_output=True, text=True,
            env=env, cwd=home.work, timeout=60,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr  # the daemon wrote its answer down
        subprocess.run(stop, env=env, capture_output=True, timeout=60)
        deep = "[" * 5_000 + "]" * 5_000  # a line the forwarder reads whole
        proc = subprocess.Popen(
            [*LOOPD, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env, cwd=home.work,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(deep + "\n")
        proc.stdin.flush()
        refused = json.loads(proc.stdout.readline() or "{}")
        assert refused.get("error", {}).get("code") == -32700, (
            proc.stderr.read() if proc.stderr else ""
        )
        proc.stdin.write(init.replace('"id": 1', '"id": 2') + "\n")
        proc.stdin.close()
        answered = json.loads(proc.stdout.readline())
        assert answered["id"] == 2 and answered["result"]["protocolVersion"] == 1
        assert proc.wait(timeout=60) == 0
    finally:
        subprocess.run(stop, env=env, capture_output=True, timeout=60)


async def test_a_mention_of_what_is_not_a_file_is_said_and_the_turn_runs(home: Home) -> None:
    """The person attaches a FIFO, a socket and a link to a device: each is said to
    the model as not read (never opened for reading: a FIFO would block, the device
    never ends), and the turn answers."""
    os.mkfifo(home.work / "pipe")
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(home.work / "sock"))
    (home.work / "zero").symlink_to("/dev/zero")
    home.fake.script("*", Reply(text="seen"))
    links = [
        {"type": "resource_link", "uri": (home.work / name).as_uri(), "name": name}
        for name in ("pipe", "sock", "zero")
    ]
    async with raw_loopd(home) as agent:
        sid = await agent.new_session(home.work)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "look"}, *links]}
        done, _ = await agent.request("session/prompt", prompt)
    assert done["result"]["stopReason"] == "end_turn"
    [request] = home.fake.requests
    told = json.dumps(request.body["messages"][-1])
    assert told.count("was mentioned but not read") == 3, told
    assert "named pipe" in told and "socket" in told
    assert "\\u0000\\u0000" not in told  # nothing of /dev/zero was read
