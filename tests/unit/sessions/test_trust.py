"""The first-turn trust step on its own: real config loading and trust store, the
shipped scripted approver and recording emitter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopd.config import TrustStore, load_config
from loopd.config.trust.prompt import TRUSTED, WorkspaceTrust
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.errors import ConfigError
from loopd.protocol.events import AgentMessageChunk, ToolCallUpdated
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover
from tests.unit.fifos import released

ALLOW, REJECT = ApprovalDecision.ALLOW_ONCE, ApprovalDecision.REJECT_ONCE


class Workspace:
    """A folder with a workspace file, the app's view of it, and reload counting."""

    def __init__(self, tmp_path: Path, text: str) -> None:
        self.folder = tmp_path / "ws"
        (self.folder / ".loopd").mkdir(parents=True)
        (self.folder / ".loopd" / "config.toml").write_text(text)
        self.env = {"LOOPD_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path)}
        self.config = load_config(self.env, self.folder)
        self.reloads = 0
        self.fail_reload: ConfigError | None = None
        self.gate = WorkspaceTrust(
            status=lambda: self.config.workspace,
            store=TrustStore(tmp_path / "data"),
            reconfigure=self.reload,
        )

    async def reload(self) -> None:
        if self.fail_reload is not None:
            raise self.fail_reload
        self.reloads += 1
        self.config = load_config(self.env, self.folder)


HELPER = '[runtimes.helper]\nharness = "claude"\ncommand = "/bin/true"\n'


async def test_a_yes_trusts_and_reloads_and_nobody_is_asked_twice(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, HELPER)
    emitter = RecordingEmitter()
    await ws.gate.first_turn("s1", emitter, ScriptedApprover.of(ALLOW))
    assert ws.reloads == 1 and set(ws.config.runtimes) == {"helper"}
    (update,) = [e for e in emitter.events if isinstance(e, ToolCallUpdated)]
    assert update.content is not None and TRUSTED in str(update.content)
    again = RecordingEmitter()
    await ws.gate.first_turn("s2", again, ScriptedApprover.of())  # trusted now: silent
    assert again.events == []


async def test_a_no_is_not_asked_again_but_said(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, HELPER)
    await ws.gate.first_turn("s1", RecordingEmitter(), ScriptedApprover.of(REJECT))
    later, approver = RecordingEmitter(), ScriptedApprover.of()
    await ws.gate.first_turn("s2", later, approver)
    assert approver.requests == [] and ws.reloads == 0
    (said,) = later.events
    assert isinstance(said, AgentMessageChunk) and "runtimes.helper" in said.text


async def test_a_file_changed_while_asking_is_not_trusted(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, HELPER)
    (ws.folder / ".loopd" / "config.toml").write_text(HELPER + "args = ['--evil']\n")
    await ws.gate.first_turn("s1", RecordingEmitter(), ScriptedApprover.of(ALLOW))
    assert ws.reloads == 0 and not TrustStore(tmp_path / "data").path.exists()


async def test_settings_that_cannot_be_used_leave_the_runtimes_alone(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, HELPER)
    ws.fail_reload = ConfigError("runtime helper: command not usable")
    emitter = RecordingEmitter()
    await ws.gate.first_turn("s1", emitter, ScriptedApprover.of(ALLOW))
    (update,) = [e for e in emitter.events if isinstance(e, ToolCallUpdated)]
    assert "cannot be used, so nothing changed: runtime helper" in str(update.content)


@pytest.mark.parametrize("text", ['[approvals]\ndeny = ["bash"]\n', ""])
async def test_nothing_to_say_when_nothing_was_ignored(tmp_path: Path, text: str) -> None:
    ws = Workspace(tmp_path, text)
    emitter = RecordingEmitter()
    await ws.gate.first_turn("s1", emitter, ScriptedApprover.of())
    assert emitter.events == []


async def test_a_fifo_in_place_of_the_file_neither_blocks_the_question_nor_is_trusted(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path, HELPER)
    file = ws.folder / ".loopd" / "config.toml"
    file.unlink()
    os.mkfifo(file)
    emitter = RecordingEmitter()
    with released(file) as blocked:
        await ws.gate.first_turn("s1", emitter, ScriptedApprover.of(ALLOW))
    assert blocked == []
    started = str(emitter.events[0])
    assert "runtimes.helper" in started  # what was read and is asked about, not re-read
    assert "Trusted" not in str(emitter.events[-1])
    assert ws.reloads == 0 and not TrustStore(tmp_path / "data").path.exists()


async def test_a_file_turned_into_a_link_out_is_not_shown(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, HELPER)
    secret = tmp_path / "elsewhere.toml"
    secret.write_text("token = 'not-for-the-question'\n")
    file = ws.folder / ".loopd" / "config.toml"
    file.unlink()
    file.symlink_to(secret)
    emitter = RecordingEmitter()
    await ws.gate.first_turn("s1", emitter, ScriptedApprover.of(ALLOW))
    assert "not-for-the-question" not in str(emitter.events)
    assert ws.reloads == 0 and not TrustStore(tmp_path / "data").path.exists()
