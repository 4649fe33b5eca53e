"""A session of the `acp` runtime over the scripted ACP agent
(`loopd.testing.scripted_acp`): a real child process, the real SDK on both sides,
the real sandbox; the test scripts what the child asks and reads what it got."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopd.engine.ports import Approver
from loopd.policy.rules import RuleSet
from loopd.runtimes.acp.agent import AcpRuntime, AcpRuntimeFactory, AcpSettings
from loopd.runtimes.base import RuntimeContext
from loopd.sandbox.probe import SandboxProbe, probe_sandbox
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover
from loopd.tools.env import ToolLimits

SECRET = "sk-ant-test-must-never-reach-a-terminal"
_probe: list[SandboxProbe] = []


def probe() -> SandboxProbe:
    """The machine's sandbox, probed once for the whole test run."""
    if not _probe:
        _probe.append(probe_sandbox(env=dict(os.environ)))
    return _probe[0]


@dataclass
class Scripted:
    runtime: AcpRuntime
    emitter: RecordingEmitter
    approver: Any
    log: Path
    ws: Path

    def answers(self) -> list[dict[str, Any]]:
        """What the child got back for each of its calls, in order."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [json.loads(line) for line in lines if '"call"' in line]

    def initialize(self) -> dict[str, Any]:
        first = json.loads(self.log.read_text().splitlines()[0])
        return dict(first["initialize"])


@asynccontextmanager
async def scripted(
    tmp_path: Path,
    turns: Sequence[Sequence[dict[str, Any]]],
    *,
    mode: str = "ask",
    rules: RuleSet | None = None,
    approver: Approver | None = None,
    limits: ToolLimits | None = None,
    state: dict[str, Any] | None = None,
    home: Path | None = None,
    resume: bool = False,
) -> AsyncIterator[Scripted]:
    """The runtime on a scripted child, for an editor whose HOME is `home` (default
    a folder beside the workspace)."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    home = home or tmp_path / "home"
    home.mkdir(exist_ok=True)
    log = tmp_path / "child.jsonl"
    script = tmp_path / "script.json"
    turns_played = [list(t) for t in turns]
    script.write_text(json.dumps({"log": str(log), "turns": turns_played, "resume": resume}))
    base_env = {"PATH": os.environ["PATH"], "HOME": str(home),
                "ANTHROPIC_API_KEY": SECRET}  # fmt: skip
    settings = AcpSettings(
        sys.executable,
        ("-m", "loopd.testing.scripted_acp", str(script)),
        base_env=base_env,
        rules=rules or RuleSet(),
        probe=probe,
        limits=limits or ToolLimits(),
    )
    emitter = RecordingEmitter()
    answering = approver or ScriptedApprover.of()
    ctx = RuntimeContext(
        "s1", str(ws.resolve()), (), emitter, answering, {"mode": mode}, state=state or {}
    )
    runtime = await AcpRuntimeFactory("scripted", settings).open(ctx)
    try:
        yield Scripted(runtime, emitter, answering, log, ws.resolve())
    finally:
        await runtime.close()
