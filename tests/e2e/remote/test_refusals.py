"""What `loopd serve` refuses: a request without the right token, a plain-HTTP
client on its TLS listener, a path outside its roots, a non-loopback listener
without TLS; and it stays up and serves the next good client."""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from acp import RequestError

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, text
from tests.e2e.daemon.conftest import loopd
from tests.e2e.remote.conftest import Server, remote_acp
from tests.unit.acp.conftest import RecordingClient

pytestmark = pytest.mark.e2e
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def pinned(home: Home) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=home.root / "data" / "remote" / "cert.pem")
    context.check_hostname = False
    return context


async def initialize(home: Home, server: Server, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(verify=pinned(home), timeout=60) as http:
        return await http.post(server.url, json=INITIALIZE, headers=headers)


async def test_a_request_without_the_token_or_with_another_is_refused(
    home: Home, server: Server
) -> None:
    assert (await initialize(home, server)).status_code == 401
    wrong = await initialize(home, server, Authorization="Bearer loopd_not-the-token")
    assert wrong.status_code == 401
    basic = await initialize(home, server, Authorization=f"Basic {server.token}")
    assert basic.status_code == 401
    good = await initialize(home, server, Authorization=f"Bearer {server.token}")
    assert good.status_code == 200 and "Acp-Connection-Id" in good.headers
    assert server.token not in "".join(server.stderr)  # never logged


async def test_a_rotated_token_stops_working_at_once(home: Home, server: Server) -> None:
    code, fresh, _ = await loopd(home, "serve", "token")
    assert code == 0
    old = await initialize(home, server, Authorization=f"Bearer {server.token}")
    assert old.status_code == 401
    new = await initialize(home, server, Authorization=f"Bearer {fresh.strip()}")
    assert new.status_code == 200
    stored = home.root / "data" / "remote" / "token.sha256"
    assert stored.stat().st_mode & 0o777 == 0o600
    assert fresh.strip() not in stored.read_text()  # only its hash is kept


async def test_a_plain_http_client_gets_nothing_from_the_tls_listener(
    home: Home, server: Server
) -> None:
    plain = server.url.replace("https://", "http://")
    bearer = {"Authorization": f"Bearer {server.token}"}
    async with httpx.AsyncClient(timeout=30) as http:
        with pytest.raises(httpx.HTTPError):
            await http.post(plain, json=INITIALIZE, headers=bearer)
    good = await initialize(home, server, Authorization=f"Bearer {server.token}")
    assert good.status_code == 200  # and the server is still up


async def test_a_bridge_pinning_another_fingerprint_refuses_to_connect(
    home: Home, server: Server
) -> None:
    other = "AA:" * 31 + "AA"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "loopd", "acp", "--remote", server.url, "--fingerprint", other,
        env=home.env(LOOPD_REMOTE_TOKEN=server.token),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2
    assert out == b""  # nothing reached the editor's protocol channel
    assert b"not the pinned" in err


@pytest.mark.parametrize("where", ["cwd", "additional", "symlink", "mention"])
async def test_a_path_outside_the_roots_is_refused(
    home: Home, server: Server, tmp_path: Path, where: str
) -> None:
    home.fake.script("*", Reply(text="never"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (home.work / "door").symlink_to(outside)  # inside by name, outside once resolved
    zed = RecordingClient()
    async with remote_acp(home, server, zed) as acp:
        with pytest.raises(RequestError) as refused:
            match where:
                case "cwd":
                    await acp.new_session(cwd=str(outside), mcp_servers=[])
                case "additional":
                    await acp.new_session(
                        cwd=str(home.work), mcp_servers=[], additional_directories=[str(outside)]
                    )
                case "symlink":
                    await acp.new_session(cwd=str(home.work / "door"), mcp_servers=[])
                case "mention":
                    sid = (await acp.new_session(cwd=str(home.work), mcp_servers=[])).session_id
                    link: Any = {"type": "resource_link", "name": "x", "uri": f"file://{outside}/x"}
                    await acp.prompt(session_id=sid, prompt=[*text("read"), link])
        assert "outside what this server serves" in str(refused.value)
        fine = await acp.new_session(cwd=str(home.work), mcp_servers=[])
        assert fine.session_id
    assert home.fake.requests == []  # nothing reached the model


async def test_listening_beyond_loopback_without_tls_is_refused(home: Home) -> None:
    code, _, err = await loopd(home, "serve", "--listen", "0.0.0.0:0", "--no-tls")
    assert code == 2
    assert "anything but loopback needs TLS and a token" in err


async def test_serving_without_a_token_is_refused(home: Home) -> None:
    code, _, err = await loopd(home, "serve", "--listen", "127.0.0.1:0")
    assert code == 2
    assert "no token yet: run `loopd serve token`" in err


async def test_a_stored_session_outside_the_roots_is_neither_listed_nor_opened(
    home: Home, server: Server, tmp_path: Path
) -> None:
    """A session a local editor keeps elsewhere: its id does not open it remotely,
    whatever cwd the message names, and no list shows it."""
    home.fake.script("*", Reply(text="elsewhere"), Reply(text="here"))
    outside = tmp_path / "private"
    outside.mkdir()
    code, _, err = await loopd(home, "run", "--cwd", str(outside), "hi")
    assert code == 0, err
    code, listed, _ = await loopd(home, "sessions", "list", "--json")
    (private,) = [s["id"] for s in json.loads(listed)]
    zed = RecordingClient()
    async with remote_acp(home, server, zed) as acp:
        mine = (await acp.new_session(cwd=str(home.work), mcp_servers=[])).session_id
        shown = await acp.list_sessions()
        assert [s.session_id for s in shown.sessions] == [mine]
        work = str(home.work)
        for opening in ("load", "resume", "fork"):
            with pytest.raises(RequestError) as refused:
                match opening:
                    case "load":
                        await acp.load_session(
                            session_id=private, cwd=str(home.work), mcp_servers=[]
                        )
                    case "resume":
                        await acp.resume_session(session_id=private, cwd=work)
                    case "fork":
                        await acp.fork_session(session_id=private, cwd=work)
            assert "outside what this server serves" in str(refused.value)
    assert zed.text() == ""  # nothing of its history was replayed
