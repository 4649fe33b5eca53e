"""The ACP checks through `--remote`: the official TypeScript client's whole session
(tests/e2e/acp/test_ts_client.py), every line it got validated against ACP's schema,
with `loopd acp --remote` as its agent and `loopd serve` behind it."""

from __future__ import annotations

import pytest

from tests.e2e.acp.conftest import Home, raw_loopd
from tests.e2e.acp.test_stdio import error_paths
from tests.e2e.acp.test_ts_client import NEEDS_CLIENT, drive_a_whole_session
from tests.e2e.remote.conftest import LOOPD, Server

pytestmark = pytest.mark.e2e


@NEEDS_CLIENT[0]
@NEEDS_CLIENT[1]
async def test_the_typescript_client_drives_a_whole_session_through_remote(
    home: Home, server: Server
) -> None:
    bridge = [*LOOPD, "acp", "--remote", server.url, "--fingerprint", server.fingerprint]
    await drive_a_whole_session(home, bridge, LOOPD_REMOTE_TOKEN=server.token)


async def test_the_raw_error_probes_answer_alike_through_remote(home: Home, server: Server) -> None:
    bridge = [*LOOPD, "acp", "--remote", server.url, "--fingerprint", server.fingerprint]
    env = home.env(LOOPD_REMOTE_TOKEN=server.token)
    async with raw_loopd(home, env, argv=bridge) as agent:
        await error_paths(home, agent)
