"""One daemon, many editors, each its own: the home a command cannot see is the
home of the editor it runs for, never the daemon's (which is the first editor's);
what one editor's environment says never changes what the daemon imports for
another; and peers that are slow, or say nothing, hold neither the daemon nor
`loopd daemon status`, which says so plainly when a daemon does not answer."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp.schema import ClientCapabilities

from loopd.daemon.place import place_of
from loopd.policy.tiers import Tier
from loopd.sandbox.probe import probe_sandbox
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import ROOT, Home, RawAgent, loopd_acp, raw_loopd, text
from tests.e2e.daemon.conftest import LOOPD, loopd, shared, status
from tests.e2e.daemon.test_sandbox_reach import tool_result
from tests.e2e.lsp.conftest import Start
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e
needs_bwrap = pytest.mark.skipif(
    probe_sandbox(which=[Tier.BWRAP]).best is not Tier.BWRAP,
    reason="needs bubblewrap for the top sandbox tier (CI installs the Debian package)",
)
KEY = "B-PRIVATE-KEY-MATERIAL"
TOKEN = "B-GH-OAUTH-TOKEN"


@pytest.fixture
def other_home() -> Iterator[Path]:
    """Editor B's home: outside `/tmp` (a command's `/tmp` is its own) and away from
    the workspace (whose neighbours are hidden anyway), with B's own secrets."""
    found = Path(tempfile.mkdtemp(prefix="loopd-home-b-", dir="/var/tmp")).resolve()
    (found / ".ssh").mkdir()
    (found / ".ssh" / "id_ed25519").write_text(KEY)
    (found / ".config" / "gh").mkdir(parents=True)
    (found / ".config" / "gh" / "hosts.yml").write_text(f"github.com:\n  oauth_token: {TOKEN}\n")
    (found / "notes.txt").write_text("B-s own notes\n")
    yield found
    shutil.rmtree(found, ignore_errors=True)


async def _bash_in_b(home: Home, b_home: Path, command: str) -> str:
    """Editor A starts the daemon and stays; editor B (HOME `b_home`) runs `command`
    in full-auto mode; what the model was told it printed."""
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("bash", {"command": command}, id="b1"),)),
        Reply(text="done"),
    )
    a, b = RecordingClient(), RecordingClient()
    async with loopd_acp(home, a, ClientCapabilities(), {"LOOPD_DAEMON": "on"}) as first:
        await first.new_session(cwd=str(home.work), mcp_servers=[])
        b_env = {"LOOPD_DAEMON": "on", "HOME": str(b_home)}
        async with loopd_acp(home, b, ClientCapabilities(), b_env) as second:
            sid = (await second.new_session(cwd=str(home.work), mcp_servers=[])).session_id
            assert (await status(home))["connections"] == 2  # one daemon serves both
            await second.set_session_mode(session_id=sid, mode_id="full_auto")
            await second.prompt(session_id=sid, prompt=text("go"))
    return tool_result(home.fake.requests[-1].body, "b1")


@needs_bwrap
async def test_each_editor_s_home_is_hidden_from_its_own_commands(
    daemon_home: Home, other_home: Path
) -> None:
    result = await _bash_in_b(
        daemon_home,
        other_home,
        'cat "$HOME/.ssh/id_ed25519" "$HOME/.config/gh/hosts.yml" "$HOME/notes.txt"; true',
    )
    assert KEY not in result and TOKEN not in result
    assert "B-s own notes" not in result  # the whole home is out of sight, as in-process


@needs_bwrap
async def test_an_absolute_path_to_the_editor_s_home_is_hidden_too(
    daemon_home: Home, other_home: Path
) -> None:
    """Not `$HOME`, which a command could be fooled about: the folder itself."""
    result = await _bash_in_b(
        daemon_home, other_home, f"ls -a {other_home}; cat {other_home}/.ssh/*; true"
    )
    assert KEY not in result and "notes.txt" not in result


async def test_the_file_tools_withhold_the_editor_s_own_secrets(
    daemon_home: Home, other_home: Path
) -> None:
    """Not named in the issue (which names commands): the file tools' secret rule
    is placed by editor B's home, not by the daemon's (editor A's). B says yes to
    every question: a secret is refused whatever the answer."""
    home = daemon_home
    hosts = other_home / ".config" / "gh" / "hosts.yml"
    calls = (
        ScriptedCall("read", {"path": str(hosts)}, id="r1"),
        ScriptedCall("grep", {"pattern": "oauth_token", "path": str(other_home)}, id="g1"),
    )
    home.fake.script("*", Reply(tool_calls=calls), Reply(text="done"))
    b_client = RecordingClient(answers=["allow_once"] * 4)
    async with loopd_acp(
        home, RecordingClient(), ClientCapabilities(), {"LOOPD_DAEMON": "on"}
    ) as a:
        await a.new_session(cwd=str(home.work), mcp_servers=[])
        b_env = {"LOOPD_DAEMON": "on", "HOME": str(other_home)}
        async with loopd_acp(home, b_client, ClientCapabilities(), b_env) as b:
            sid = (await b.new_session(cwd=str(home.work), mcp_servers=[])).session_id
            assert (await status(home))["connections"] == 2
            await b.prompt(session_id=sid, prompt=text("go"))
    body = home.fake.requests[-1].body
    read, grep = tool_result(body, "r1"), tool_result(body, "g1")
    assert TOKEN not in read and TOKEN not in grep
    assert "holds credentials" in read


def _user_skill(config: Path, name: str) -> None:
    skill = config / "loopd" / "skills" / name / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(f"---\nname: {name}\ndescription: {name} things\n---\nSteps.\n")


async def test_each_editor_s_locale_terminal_and_user_config_are_its_own(
    daemon_home: Home,
) -> None:
    """Not named in the issue: other values of the editor's environment. Editor A
    starts the daemon with its LANG, TERM and XDG_CONFIG_HOME (its own skills);
    editor B's commands run with B's locale and terminal, and B's session offers
    B's skills, never A's."""
    home = daemon_home
    a_config, b_config = home.root / "config", home.root / "config-b"
    _user_skill(a_config, "a-only-skill")
    _user_skill(b_config, "b-only-skill")
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("bash", {"command": 'echo "$LANG/$TERM"'}, id="b1"),)),
        Reply(text="done"),
    )
    a_env = {"LOOPD_DAEMON": "on", "LANG": "C.utf8", "TERM": "term-of-a"}
    b_env = {
        "LOOPD_DAEMON": "on", "LANG": "POSIX", "TERM": "term-of-b",
        "XDG_CONFIG_HOME": str(b_config),
    }  # fmt: skip
    async with loopd_acp(home, RecordingClient(), ClientCapabilities(), a_env) as first:
        await first.new_session(cwd=str(home.work), mcp_servers=[])
        async with loopd_acp(home, RecordingClient(), ClientCapabilities(), b_env) as second:
            sid = (await second.new_session(cwd=str(home.work), mcp_servers=[])).session_id
            assert (await status(home))["connections"] == 2  # one daemon serves both
            await second.set_session_mode(session_id=sid, mode_id="full_auto")
            await second.prompt(session_id=sid, prompt=text("go"))
    result = tool_result(home.fake.requests[-1].body, "b1")
    assert "POSIX/term-of-b" in result and "term-of-a" not in result
    offered = json.dumps(home.fake.requests[0].body)
    assert "b-only-skill" in offered and "a-only-skill" not in offered


def evil_path(home: Home) -> str:
    """A PYTHONPATH that shadows pygls with a module saying it was imported."""
    evil = home.root / "evil"
    (evil / "pygls").mkdir(parents=True)
    marker = home.root / "pygls-from-editor-a"
    (evil / "pygls" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    return f"{evil}:{ROOT / 'server'}"


async def test_an_editor_s_pythonpath_never_reaches_another_editor_s_stack(
    daemon_home: Home, start: Start
) -> None:
    home = daemon_home
    async with raw_loopd(home, shared(home, PYTHONPATH=evil_path(home))) as zed:
        await zed.new_session(home.work)  # editor A started the daemon, on ACP
        neovim = await start({}, server=([*LOOPD, "lsp"], shared(home)))
        found = await neovim.request("loopd/session/list", {})
        assert "sessions" in found  # B's LSP stack is the real pygls
        assert (await status(home))["connections"] == 2
    assert not (home.root / "pygls-from-editor-a").exists()


def _silent_peers(home: Home, count: int) -> list[socket.socket]:
    """Peers of this user that connect to the daemon and say nothing."""
    place = place_of(shared(home))
    peers = []
    for _ in range(count):
        sock = place.connect()
        assert sock is not None
        peers.append(sock)
    return peers


async def test_silent_peers_hold_neither_new_editors_nor_status(daemon_home: Home) -> None:
    home = daemon_home
    async with raw_loopd(home, shared(home)) as zed:
        await zed.initialized()
        peers = _silent_peers(home, 16)  # more than a default thread pool's workers
        try:
            code, out, err = await loopd(home, "daemon", "status")
            assert code == 0 and "editor connection(s)" in out, err
            async with raw_loopd(home, shared(home)) as late:
                sid = await late.new_session(home.work)
                assert sid in (await status(home))["sessions"]
        finally:
            for peer in peers:
                peer.close()


async def _peers_while_they_last(home: Home, count: int) -> list[socket.socket]:
    """Up to `count` silent peers; ten connects in a row that fail, a moment apart
    (the daemon's backlog is full and it accepts no more), end the attempt."""
    peers: list[socket.socket] = []
    failed = 0
    while len(peers) < count and failed < 10:
        try:
            sock = place_of(shared(home)).connect(timeout=1)
        except OSError:  # the backlog is full (at once, for a Unix socket)
            sock = None
            await asyncio.sleep(0.2)
        failed = 0 if sock else failed + 1
        peers += [sock] if sock else []
    return peers


async def test_peers_that_take_every_descriptor_do_not_end_accepting(daemon_home: Home) -> None:
    """Another limit: a daemon started with 100 descriptors, and 200 peers that
    hold them. Once they go, the daemon accepts again."""
    home = daemon_home
    argv = ["sh", "-c", 'ulimit -n 100 && exec "$@"', "sh", *LOOPD, "acp"]
    proc = await asyncio.create_subprocess_exec(
        *argv, env=shared(home), cwd=home.work, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    zed = RawAgent(proc)
    try:
        await zed.initialized()  # the daemon, started by this editor, has its limit
        peers = await _peers_while_they_last(home, 200)
        assert len(peers) >= 64  # at least the listener's backlog: the daemon ran out
        for peer in peers:
            peer.close()
        for _ in range(100):  # the backlog drains as the daemon takes its pause's end
            code, out, err = await loopd(home, "daemon", "status")
            if code == 0 or "takes no connection" not in err:
                break
            await asyncio.sleep(0.1)
        assert code == 0 and "editor connection(s)" in out, err  # (peers still leaving)
        log = await asyncio.to_thread(Path(place_of(shared(home)).log).read_text)
        assert "could not accept a connection" in log
    finally:
        proc.kill()
        await proc.wait()


async def test_a_peer_that_dribbles_its_request_is_hung_up_on(daemon_home: Home) -> None:
    """A frame sent a byte at a time, each byte within the old per-read timeout:
    the whole frame has a deadline, so the daemon lets the peer go."""
    home = daemon_home
    async with raw_loopd(home, shared(home)) as zed:
        await zed.initialized()
        [peer] = _silent_peers(home, 1)
        with peer:
            peer.sendall((1000).to_bytes(4, "big"))
            peer.setblocking(False)

            async def dribble() -> None:
                for _ in range(1000):
                    try:
                        peer.send(b" ")
                    except OSError:
                        return  # hung up on
                    await asyncio.sleep(0.5)

            loop = asyncio.get_running_loop()
            dribbling = asyncio.create_task(dribble())
            try:
                assert await asyncio.wait_for(loop.sock_recv(peer, 10), 60) == b""
            finally:
                dribbling.cancel()
        assert (await status(home))["connections"] == 1  # the editor, still served


async def test_status_of_a_daemon_that_does_not_answer_says_so(daemon_home: Home) -> None:
    home = daemon_home
    place = place_of(shared(home))
    place.prepare()
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mute.bind(place.endpoint)  # listens, accepts nobody, answers nothing
    os.chmod(place.endpoint, 0o600)
    mute.listen(4)
    try:
        code, out, err = await loopd(home, "daemon", "status")
        assert code == 1 and out == ""
        assert "did not answer within 5 s" in err and "Traceback" not in err
        code, out, err = await loopd(home, "daemon", "status", "--json")
        assert code == 1 and '"error": "the daemon did not answer within 5 s"' in out
    finally:
        mute.close()
        os.unlink(place.endpoint)


async def test_status_of_a_daemon_whose_backlog_is_full_says_so(daemon_home: Home) -> None:
    """Another way not to answer: the socket takes no connection at all."""
    home = daemon_home
    place = place_of(shared(home))
    place.prepare()
    full = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    full.bind(place.endpoint)
    os.chmod(place.endpoint, 0o600)
    full.listen(0)
    queued = []
    try:
        while True:  # fill the backlog; nobody accepts
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.setblocking(False)
            queued.append(peer)
            peer.connect(place.endpoint)
    except BlockingIOError:
        pass
    try:
        code, out, err = await loopd(home, "daemon", "status")
        assert code == 1 and out == ""
        assert "the daemon takes no connection" in err and "Traceback" not in err
    finally:
        for peer in queued:
            peer.close()
        full.close()
        os.unlink(place.endpoint)
