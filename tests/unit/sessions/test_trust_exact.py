"""Trust is given to exactly what was shown, and an untrusted file never stops loopd:
real config loading, trust store and app; the person is an approver that acts
while the question is on screen, as an attacker's command would."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from loopd.app import build_app
from loopd.config import TrustStore, load_config
from loopd.config.trust.prompt import SHOWN_BYTES
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover
from tests.unit.sessions.test_trust import HELPER, Workspace

BENIGN = '[approvals]\ndeny = ["bash"]\n[limits]\nmax_iterations = 5\n'
EVIL = HELPER + "args = ['--evil']\n"


@dataclass
class PersonWhileAsked:
    """Says yes; `meanwhile` runs while the question is shown."""

    meanwhile: Callable[[], None]
    shown: list[str] = field(default_factory=list)

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        self.shown.append(str(request.content))
        self.meanwhile()
        return ApprovalDecision.ALLOW_ONCE


async def test_the_bytes_trusted_are_the_bytes_shown(tmp_path: Path) -> None:
    # The instance: loopd read B; the question re-read the file and showed A; the
    # file was B again by the yes, and B's command ran.
    ws = Workspace(tmp_path, EVIL)
    file = ws.folder / ".loopd" / "config.toml"
    file.write_text(BENIGN)  # what a re-read would show
    person = PersonWhileAsked(lambda: file.write_text(EVIL))
    await ws.gate.first_turn("s1", RecordingEmitter(), person)
    (shown,) = person.shown
    trusted = set(ws.config.runtimes) == {"helper"}
    assert trusted and "--evil" in shown  # trusted: then it was what was shown
    assert "max_iterations = 5" not in shown


async def test_a_swap_after_the_question_is_not_trusted(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, HELPER)
    file = ws.folder / ".loopd" / "config.toml"
    person = PersonWhileAsked(lambda: file.write_text(EVIL))
    await ws.gate.first_turn("s1", RecordingEmitter(), person)
    assert ws.reloads == 0 and not TrustStore(tmp_path / "data").path.exists()


async def test_a_file_too_long_to_show_whole_is_not_asked_about(tmp_path: Path) -> None:
    # Not named in the issue: the question showed the first 8,000 bytes and a yes
    # trusted the runtime hidden after them.
    padded = "# nothing to see here\n" * (SHOWN_BYTES // 20) + EVIL
    ws = Workspace(tmp_path, padded)
    approver, emitter = ScriptedApprover.of(ApprovalDecision.ALLOW_ONCE), RecordingEmitter()
    await ws.gate.first_turn("s1", emitter, approver)
    assert approver.requests == [] and ws.reloads == 0
    assert "too long to show" in emitter.text
    assert not TrustStore(tmp_path / "data").path.exists()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[defaults\n", "not valid TOML"),  # the instance: every `loopd run` failed
        ("[limits]\nmax_iterations = 'many'\n", "limits.max_iterations"),  # a typed key
        ("[defaults]\nmode = 'yolo'\n", "defaults.mode"),
    ],
)
async def test_an_untrusted_file_that_cannot_be_used_never_stops_loopd(
    tmp_path: Path, text: str, why: str
) -> None:
    folder = tmp_path / "ws"
    (folder / ".loopd").mkdir(parents=True)
    (folder / ".loopd" / "config.toml").write_text(text)
    env = {"LOOPD_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path), "PATH": "/bin"}
    app = build_app(env, str(folder))
    try:
        status = app.config.workspace
        assert status is not None and why in status.notice and "was ignored" in status.notice
        assert app.config.limits == load_config(env, tmp_path).limits  # nothing applied
    finally:
        await app.aclose()


async def test_a_file_that_cannot_be_used_is_said_not_asked(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, "[defaults\n")
    approver, emitter = ScriptedApprover.of(ApprovalDecision.ALLOW_ONCE), RecordingEmitter()
    await ws.gate.first_turn("s1", emitter, approver)
    assert approver.requests == []
    assert "not valid TOML" in emitter.text


async def test_the_question_names_the_files_trust_pins(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, '[runtimes.helper]\nharness = "acp"\ncommand = "/bin/sh"\n')
    (ws.folder / "agent.sh").write_text("echo agent\n")
    (ws.folder / ".loopd" / "config.toml").write_text(
        '[runtimes.helper]\nharness = "acp"\ncommand = "/bin/sh"\nargs = ["agent.sh"]\n'
    )
    ws.config = load_config(ws.env, ws.folder)
    person = PersonWhileAsked(lambda: None)
    await ws.gate.first_turn("s1", RecordingEmitter(), person)
    (shown,) = person.shown
    assert f"{ws.folder.resolve()}/agent.sh" in shown and "pinned" in shown


async def test_a_pinned_script_swapped_while_asked_is_not_trusted(tmp_path: Path) -> None:
    # Not named in the issue: the config's bytes stay as shown, but the script it
    # runs is rewritten (by a sandboxed command) while the question is on screen.
    text = '[runtimes.helper]\nharness = "acp"\ncommand = "/bin/sh"\nargs = ["agent.sh"]\n'
    ws = Workspace(tmp_path, text)
    script = ws.folder / "agent.sh"
    script.write_text("echo agent\n")
    ws.config = load_config(ws.env, ws.folder)
    person = PersonWhileAsked(lambda: script.write_text("env > /tmp/pwned\n"))
    emitter = RecordingEmitter()
    await ws.gate.first_turn("s1", emitter, person)
    assert "agent.sh" in person.shown[0]
    assert ws.reloads == 0 and not TrustStore(tmp_path / "data").path.exists()
    assert "Trusted." not in emitter.text
