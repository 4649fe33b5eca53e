"""What people install answers: in each clean venv (`installs.py`), against the fake
model on loopback with a key set, a `loopd run` turn, `loopd acp` and `loopd lsp`
through the daemon as an editor starts them (a tool call the person approves), and
the registry entry's `uvx` command on each Python the package claims.

Every environment here is built from nothing: no PYTHONPATH, so the code that runs
is the installed wheel's, never this checkout's."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import ClientCapabilities, Implementation

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import LOOPD, ROOT, isolated_env
from tests.e2e.lsp.conftest import Start
from tests.e2e.packaging.installs import (
    Venv,
    claimed_pythons,
    find_python,
    find_uv,
    uv_settings,
    wheel_version,
)
from tests.e2e.remote.conftest import serve, stop_server
from tests.unit.acp.conftest import RecordingClient, text

pytestmark = pytest.mark.e2e

ENTRY = json.loads((ROOT / "registry" / "loopd" / "agent.json").read_text())
WRITE = {"path": "hello.txt", "content": "hello\n"}
Loopd = list[str]
Daemon = tuple[Loopd, dict[str, str]]
"""A loopd command and the environment it finds the daemon with."""
Daemons = list[Daemon]


def editor_env(tmp: Path, fake: FakeLLMServer) -> dict[str, str]:
    """What an editor gives the loopd it starts: a private home, a key for the fake
    model (Anthropic's API), the daemon on (the default), nothing of this checkout."""
    env = isolated_env(tmp, fake, LOOPD_DAEMON="on")
    del env["PYTHONPATH"]
    return env


def openai_env(tmp: Path, fake: FakeLLMServer) -> dict[str, str]:
    """`editor_env` with the fake as an OpenAI-compatible server instead."""
    env = editor_env(tmp, fake)
    del env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"]
    return env | {"OPENAI_BASE_URL": fake.openai_base_url, "OPENAI_API_KEY": "test-key"}


def script_an_approved_write(fake: FakeLLMServer) -> None:
    fake.script(
        "*", Reply(tool_calls=(ScriptedCall("write", WRITE, id="w1"),)), Reply(text="Done.")
    )


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def replied(lines: list[dict[str, Any]]) -> str:
    """The reply's text as `--json` streamed it: chunks arrive as the deltas came
    together (one on an idle machine, one per word under load), so they are joined."""
    return "".join(
        line["update"]["content"]["text"]
        for line in lines
        if line["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def loopd(venv: Venv, args: list[str], env: dict[str, str], cwd: Path) -> str:
    ran = subprocess.run(
        [venv.bin("loopd"), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, f"{venv.install.name}: loopd {' '.join(args)}:\n{ran.stderr}"
    return ran.stdout


def test_loopd_run_answers_a_turn_to_end_turn(
    venv: Venv, wheel: Path, fake: FakeLLMServer, tmp_path: Path
) -> None:
    fake.script("*", Reply(text="hi there"))
    env = editor_env(tmp_path, fake)
    said = loopd(venv, ["--version"], env, tmp_path)
    ran = loopd(venv, ["run", "--json", "hi"], env, tmp_path)
    lines = [json.loads(line) for line in ran.splitlines()]

    assert said.strip() == f"loopd {wheel_version(wheel)}"
    assert lines[-1]["stopReason"] == "end_turn"
    assert replied(lines[:-1]) == "hi there"
    assert fake.requests[0].headers["x-api-key"] == "test-key"


@pytest.fixture
def daemons() -> Iterator[Daemons]:
    """`(loopd command, env)` of each daemon a test starts, stopped after the test's
    editors have gone (request it before `start`)."""
    started: Daemons = []
    yield started
    for loopd, env in started:
        subprocess.run([*loopd, "daemon", "stop"], env=env, check=True, capture_output=True)


def daemon_python(loopd: Loopd, env: dict[str, str]) -> str:
    """The interpreter the running daemon was started with (`argv[0]`)."""
    ran = subprocess.run([*loopd, "daemon", "status", "--json"], env=env, capture_output=True)
    status = json.loads(ran.stdout)
    assert status["running"], status
    return Path(f"/proc/{status['pid']}/cmdline").read_bytes().split(b"\0")[0].decode()


def ended(client: RecordingClient, call_id: str) -> str | None:
    """How the editor was told the call ended (`completed`, `failed`), None if never:
    a write the tool refused reaches the model as a result it answers, and the turn
    still ends `end_turn`, so the test reads the status (and, failed, the reason)."""
    statuses = [
        u.get("status")
        for u in client.of("tool_call_update")
        if u["toolCallId"] == call_id and u.get("status") in ("completed", "failed")
    ]
    return statuses[-1] if statuses else None


@dataclass(frozen=True, slots=True)
class AcpTurn:
    version: str
    """The agent's version (`agentInfo`)."""
    daemon: str
    """The interpreter of the daemon that served it, asked while the editor was on."""


async def acp_turn(
    argv: Loopd, env: dict[str, str], work: Path, fake: FakeLLMServer, ask: Daemon
) -> AcpTurn:
    """An editor's ACP session on `argv`: initialize, session/new, a prompt whose
    write the person allows; `ask` is the loopd (and its env) that asks after the
    daemon."""
    script_an_approved_write(fake)
    client = RecordingClient(answers=["allow_once"])
    async with spawn_agent_process(client, *argv, env=env, cwd=work) as (conn, _):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="zed", version="0"),
        )
        sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
        done = await conn.prompt(session_id=sid, prompt=text("write hello.txt"))
        daemon = daemon_python(*ask)  # before the daemon's idle exit can come

    assert done.stop_reason == "end_turn"
    assert [call.tool_call_id for call, _ in client.permissions] == ["w1"]
    assert ended(client, "w1") == "completed", client.of("tool_call_update")  # or why not
    assert (work / "hello.txt").read_text() == "hello\n"
    assert client.text() == "Done."
    assert init.agent_info is not None
    return AcpTurn(init.agent_info.version, daemon)


async def test_loopd_acp_through_the_daemon_runs_an_approved_tool(
    venv: Venv, wheel: Path, fake: FakeLLMServer, tmp_path: Path, daemons: Daemons
) -> None:
    env = editor_env(tmp_path, fake)
    daemons.append(([venv.bin("loopd")], env))
    turn = await acp_turn([venv.bin("loopd"), "acp"], env, tmp_path, fake, daemons[0])

    assert turn.version == wheel_version(wheel)
    assert turn.daemon == venv.bin("python")  # the installed package served the turn


async def test_loopd_lsp_through_the_daemon_runs_an_approved_tool(
    venv: Venv,
    wheel: Path,
    fake: FakeLLMServer,
    tmp_path: Path,
    daemons: Daemons,
    start: Start,
) -> None:
    script_an_approved_write(fake)
    env = editor_env(tmp_path, fake)
    daemons.append(([venv.bin("loopd")], env))
    editor = await start({}, server=([venv.bin("loopd"), "lsp"], env))
    editor.answers.append("allow_once")
    sid = await editor.new_session()
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "write hello.txt"}]}
    done = await editor.request("loopd/session/prompt", prompt)

    assert done["stopReason"] == "end_turn"
    assert editor.server is not None and editor.server.server_info is not None
    assert editor.server.server_info.version == wheel_version(wheel)
    assert [r["toolCall"]["toolCallId"] for r in editor.permission_requests] == ["w1"]
    assert (tmp_path / "hello.txt").read_text() == "hello\n"
    assert daemon_python([venv.bin("loopd")], env) == venv.bin("python")


@pytest.mark.parametrize("python", claimed_pythons())
async def test_the_registry_entry_s_uvx_command_runs_an_approved_tool(
    python: str, wheel: Path, fake: FakeLLMServer, tmp_path: Path, daemons: Daemons
) -> None:
    """`uvx loopd-agent==V acp`, as the registry's editors run it, the package found
    in the build (`--find-links`) and its dependencies in uv's cache or the index."""
    uvx = ENTRY["distribution"]["uvx"]
    uv = uv_settings()
    env = openai_env(tmp_path, fake) | uv  # the other provider family, as some editors
    tool = [find_uv(), "tool", "run", "--isolated", "--python", find_python(python)]
    command = [*tool, "--find-links", str(wheel.parent), uvx["package"]]
    # each uvx makes a new environment: this checkout's loopd (the same version)
    # asks after the daemon and stops it
    here = env | {"PYTHONPATH": str(ROOT / "server")}
    daemons.append((LOOPD, here))
    turn = await acp_turn([*command, *uvx["args"]], env, tmp_path, fake, daemons[0])

    assert f"loopd-agent=={turn.version}" == uvx["package"]
    assert turn.daemon.startswith(uv["UV_CACHE_DIR"])  # uvx's own environment
    assert "/v1/chat/completions" in {r.path for r in fake.requests}


async def test_loopd_serve_and_a_remote_editor_run_an_approved_tool(
    serving_venv: Venv, fake: FakeLLMServer, tmp_path: Path, daemons: Daemons
) -> None:
    """The `serve` extra at its lowest versions (cryptography, hypercorn): `loopd
    serve` on loopback with its self-signed certificate, and an editor's `loopd acp
    --remote` to it, both the venv's."""
    work = tmp_path / "work"
    work.mkdir()
    env = editor_env(tmp_path, fake)
    daemons.append(([serving_venv.bin("loopd")], env))
    token = loopd(serving_venv, ["serve", "token"], env, tmp_path).strip()
    argv = [serving_venv.bin("loopd"), "serve", "--listen", "127.0.0.1:0", "--root", str(work)]
    server = await serve(argv, env, token)
    try:
        remote = ["acp", "--remote", server.url, "--fingerprint", server.fingerprint]
        bridge = env | {"LOOPD_REMOTE_TOKEN": token}
        turn = await acp_turn([serving_venv.bin("loopd"), *remote], bridge, work, fake, daemons[0])
    finally:
        await stop_server(server)

    assert turn.daemon == serving_venv.bin("python")
    assert "Traceback" not in "".join(server.stderr), server.stderr


def test_loopd_serve_without_its_extra_names_the_install_line(
    plain_venv: Venv, fake: FakeLLMServer, tmp_path: Path
) -> None:
    """The package alone has no hypercorn nor cryptography: `loopd serve` says to
    install the extra, exit 2, rather than a traceback of an import."""
    env = editor_env(tmp_path, fake)
    loopd(plain_venv, ["serve", "token"], env, tmp_path)
    argv = [plain_venv.bin("loopd"), "serve", "--listen", "127.0.0.1:0", "--root", str(tmp_path)]
    ran = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)

    assert ran.returncode == 2, ran.stderr
    assert "uv tool install 'loopd-agent[serve]'" in ran.stderr
    assert "Traceback" not in ran.stderr
