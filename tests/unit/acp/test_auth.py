"""Logging in from the editor: the advertised method, `auth_required` while nothing can
run a session, `authenticate` once credentials exist, and `logout`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import AuthCapabilities, ClientCapabilities

from loopd.runtimes.base import RuntimeFactory
from loopd.sessions.manager import SessionManager
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import scripted_manager
from tests.unit.acp.conftest import RecordingClient, connected, text


@dataclass
class ScriptedCredentials:
    """Credentials that exist once `logged_in` is set, as after `loopd login`."""

    manager: SessionManager
    runtimes: dict[str, RuntimeFactory]
    logged_in: bool = False
    calls: list[str] = field(default_factory=list)

    async def reload(self) -> None:
        self.calls.append("reload")
        offered = self.runtimes if self.logged_in else {}
        self.manager.use_runtimes(offered, "native", lambda name, config: {})

    async def logout(self) -> None:
        self.calls.append("logout")
        self.logged_in = False
        await self.reload()


def logged_out(tmp_path: Path) -> tuple[SessionManager, ScriptedCredentials]:
    manager = scripted_manager(tmp_path, ScriptedProvider.of(Reply(text="hi")))
    credentials = ScriptedCredentials(manager, dict(manager.runtimes))
    manager.runtimes = {}
    manager.credentials = credentials
    return manager, credentials


@pytest.mark.parametrize(
    ("capabilities", "kind"),
    [
        (ClientCapabilities(auth=AuthCapabilities(terminal=True)), "terminal"),
        (ClientCapabilities(field_meta={"terminal-auth": True}), "terminal"),
        (ClientCapabilities(), None),
    ],
)
async def test_one_login_method_shaped_for_what_the_client_runs(
    tmp_path: Path, capabilities: ClientCapabilities, kind: str | None
) -> None:
    manager, _ = logged_out(tmp_path)
    async with connected(manager, RecordingClient(), capabilities) as s:
        result = await s.raw("initialize", {"protocolVersion": 1, **_caps(capabilities)})
    [method] = result["authMethods"]
    assert method["id"] == "loopd-login"
    assert method.get("type") == kind
    if kind == "terminal":
        assert method["args"] == ["login"]
    else:  # the form clients read before terminal methods were stable
        assert method["_meta"]["terminal-auth"]["args"] == ["login"]


def _caps(capabilities: ClientCapabilities) -> dict[str, Any]:
    wire = capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"clientCapabilities": wire}


async def test_no_credentials_is_auth_required_until_a_login(tmp_path: Path) -> None:
    manager, credentials = logged_out(tmp_path)
    async with connected(manager, RecordingClient()) as s:
        with pytest.raises(RequestError) as refused:
            await s.raw("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert refused.value.code == -32000
        assert refused.value.data["authMethods"][0]["id"] == "loopd-login"
        assert "no runtime is available" in refused.value.data["details"]

        with pytest.raises(RequestError) as still:
            await s.raw("authenticate", {"methodId": "loopd-login"})
        assert still.value.code == -32000
        assert "still no usable credentials" in still.value.data["details"]

        credentials.logged_in = True  # the person ran `loopd login` meanwhile
        assert await s.raw("authenticate", {"methodId": "loopd-login"}) == {}
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        result = await s.conn.prompt(session_id=new.session_id, prompt=text("hello"))
    assert result.stop_reason == "end_turn"
    assert credentials.calls == ["reload"] * 3  # session/new looks too, then authenticate twice


async def test_an_unknown_method_is_invalid(tmp_path: Path) -> None:
    manager, _ = logged_out(tmp_path)
    async with connected(manager, RecordingClient()) as s:
        with pytest.raises(RequestError) as err:
            await s.raw("authenticate", {"methodId": "oauth"})
    assert err.value.code == -32602


async def test_logout_forgets_the_login(tmp_path: Path) -> None:
    manager, credentials = logged_out(tmp_path)
    credentials.logged_in = True
    async with connected(manager, RecordingClient()) as s:
        await s.raw("authenticate", {"methodId": "loopd-login"})
        await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert await s.raw("logout", {}) == {}
        with pytest.raises(RequestError) as err:
            await s.raw("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    assert err.value.code == -32000
    assert credentials.calls == ["reload", "logout", "reload", "reload"]
