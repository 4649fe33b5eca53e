"""The bash tool's two escalations (`network`, `sandbox: false`) are declared for the
policy and used only with the call's grant; a failure that looks like the sandbox's
doing says so, and names the escalation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from loopd.engine.ports import ToolCall, ToolResult
from loopd.policy.grants import Grant
from loopd.sandbox.base import CommandSpec, PreparedCommand, sanitized_env
from loopd.tools import ToolEnv, ToolRegistry


@dataclass
class RecordingSandbox:
    """Runs commands as they are, claiming a tier, and records every spec."""

    tier: str
    specs: list[CommandSpec] = field(default_factory=list)

    def prepare(self, spec: CommandSpec) -> PreparedCommand:
        self.specs.append(spec)
        return PreparedCommand(spec.argv, sanitized_env({"PATH": "/usr/bin:/bin"}), spec.cwd)


@pytest.fixture
async def rig(
    tmp_path: Path,
) -> AsyncIterator[tuple[ToolRegistry, RecordingSandbox, RecordingSandbox]]:
    inside, outside = RecordingSandbox("bwrap"), RecordingSandbox("none")
    env = ToolEnv(roots=(str(tmp_path),), sandbox=inside, outside=outside)
    yield ToolRegistry(env), inside, outside
    await env.aclose()


async def run(tools: ToolRegistry, grant: Grant | None = None, **args: object) -> ToolResult:
    call = ToolCall("c1", "bash", dict(args))
    if grant is not None:
        tools.env.grants.record("c1", grant)
    return await tools.run(call, _ignore)


async def _ignore(content: object) -> None:
    return None


async def test_the_escalations_are_declared(
    rig: tuple[ToolRegistry, RecordingSandbox, RecordingSandbox],
) -> None:
    tools = rig[0]
    plain = await tools.declare(ToolCall("c", "bash", {"command": "ls"}))
    assert (plain.network, plain.unsandboxed) == (False, False)
    both = await tools.declare(
        ToolCall("c", "bash", {"command": "npm i", "network": True, "sandbox": False})
    )
    assert (both.network, both.unsandboxed) == (True, True)
    assert both.title == "Run `npm i` outside the sandbox"


async def test_network_is_on_only_with_the_grant(
    rig: tuple[ToolRegistry, RecordingSandbox, RecordingSandbox],
) -> None:
    tools, inside, _ = rig
    await run(tools, command="true", network=True)
    await run(tools, Grant(network=True), command="true", network=True)
    assert [s.network for s in inside.specs] == [False, True]


async def test_outside_the_sandbox_only_with_the_grant(
    rig: tuple[ToolRegistry, RecordingSandbox, RecordingSandbox],
) -> None:
    tools, inside, outside = rig
    refused = await run(tools, command="true", sandbox=False)
    assert refused.is_error
    assert refused.output == "Running outside the sandbox was not approved for this call."
    assert (inside.specs, outside.specs) == ([], [])
    done = await run(tools, Grant(unsandboxed=True), command="true", sandbox=False)
    assert not done.is_error
    assert (len(inside.specs), len(outside.specs)) == (0, 1)


async def test_a_denial_looking_failure_names_the_retry(
    rig: tuple[ToolRegistry, RecordingSandbox, RecordingSandbox],
) -> None:
    result = await run(rig[0], command="echo 'touch: /etc/x: Read-only file system' >&2; exit 1")
    assert "looks like the bwrap sandbox refusing it" in result.output
    assert '"sandbox": false' in result.output
    net = await run(rig[0], command="echo 'curl: (7) Connection refused'; exit 7")
    assert 'run it again with "network": true' in net.output
    ok = await run(rig[0], command="echo Permission denied")  # exit 0: nothing to explain
    assert "sandbox" not in ok.output


async def test_a_refused_unix_socket_points_at_the_allow_list_not_an_escalation(
    rig: tuple[ToolRegistry, RecordingSandbox, RecordingSandbox],
) -> None:
    python = "echo 'dial unix /var/run/docker.sock: connect: operation not permitted' >&2; exit 1"
    result = await run(rig[0], command=python)
    assert "refuses Unix sockets" in result.output
    assert "allow_unix_sockets" in result.output
    assert '"sandbox": false' not in result.output
    assert '"network": true' not in result.output


async def test_commands_naming_secrets_are_told_they_are_hidden(
    rig: tuple[ToolRegistry, RecordingSandbox, RecordingSandbox],
) -> None:
    result = await run(rig[0], command="cat .env ~/.ssh/id_rsa; true")
    assert "Secret files" in result.output
    assert "Secret files" not in (await run(rig[0], command="cat README; true")).output


async def test_no_sandbox_notes_outside_a_containing_tier(tmp_path: Path) -> None:
    env = ToolEnv(roots=(str(tmp_path),), sandbox=RecordingSandbox("none"))
    result = await run(ToolRegistry(env), command="echo Permission denied; cat .env; exit 1")
    assert "sandbox" not in result.output.split("Exit code: 1")[1]
    await env.aclose()
