"""What loopd reads of a workspace on its own (instruction files, skills, ignore
files, git's config) obeys the rules the file tools obey: nothing through a symlink
out, no FIFO that blocks, no secret, loopd's own folders included wherever they are.
Each case is a real `loopd run` against the loopback fake model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from loopd.testing.fake_llm import Reply
from tests.e2e.safety.conftest import FAKE_KEY, SSH_KEY, Box, calls, git_repo, loopd_run
from tests.unit.fifos import released

pytestmark = pytest.mark.e2e

LOGIN_SECRET = "sk-login-s3cret-93"


def stored(box: Box, data: Path) -> str:
    """Everything loopd keeps in its data dir (the store and its journal), as text."""
    return "".join(
        p.read_bytes().decode("utf-8", "replace") for p in data.rglob("*") if p.is_file()
    )


def system_prompts(requests: list[dict[str, object]]) -> str:
    return json.dumps([r.get("system") for r in requests])


async def test_an_agents_md_linked_to_the_environment_reaches_neither_model_nor_store(
    tmp_path: Path,
) -> None:
    box = Box.make(tmp_path)
    (box.ws / "AGENTS.md").symlink_to("/proc/self/environ")
    (box.ws / "CLAUDE.md").symlink_to(box.home / ".ssh" / "id_rsa")
    run = await loopd_run(box, [Reply(text="done")])
    assert run.code == 0, run.err
    assert FAKE_KEY not in run.bodies and SSH_KEY not in run.bodies
    assert FAKE_KEY not in stored(box, box.base / "data")
    assert SSH_KEY not in stored(box, box.base / "data")
    said = system_prompts(run.requests)
    assert "loopd did not read AGENTS.md" in said and "leads outside" in said


async def test_a_fifo_as_claude_md_or_as_a_skill_does_not_block_the_session(
    tmp_path: Path,
) -> None:
    box = Box.make(tmp_path)
    skill = box.ws / ".loopd" / "skills" / "deploy"
    skill.mkdir(parents=True)
    fifos = (box.ws / "CLAUDE.md", skill / "SKILL.md", box.ws / ".gitignore")
    for fifo in fifos:
        os.mkfifo(fifo)
    with released(*fifos) as blocked:
        run = await loopd_run(box, [calls(("glob", {"pattern": "*.txt"})), Reply(text="done")])
    assert blocked == [] and run.code == 0, run.err
    assert "notes.txt" in run.tool_results()[0]
    said = system_prompts(run.requests)
    assert "loopd did not read CLAUDE.md" in said and "named pipe (FIFO)" in said


async def test_grep_and_explores_grep_never_read_the_login_inside_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = Box.make(tmp_path)
    data = box.ws / "loopd-data"  # $LOOPD_HOME inside the workspace
    data.mkdir()
    login = data / "login.json"
    login.write_text(json.dumps({"env": {"OPENAI_API_KEY": LOGIN_SECRET}}))
    login.chmod(0o600)
    monkeypatch.setattr(Box, "env", _env_with_home(Box.env, data))
    replies = [
        calls(("grep", {"pattern": "s3cret"}), ("grep", {"pattern": "s3cret", "path": str(data)})),
        calls(("explore", {"question": "where is s3cret?"})),
        calls(("grep", {"pattern": "s3cret"})),  # the explorer's own search
        Reply(text="found nothing"),
        Reply(text="done"),
    ]
    run = await loopd_run(box, replies, "--yes")
    assert run.code == 0, run.err
    assert LOGIN_SECRET not in run.bodies
    assert len(run.tool_results()) >= 3  # the searches ran and answered


def _env_with_home(env, data: Path):  # type: ignore[no-untyped-def]
    def patched(self: Box, base_url: str) -> dict[str, str]:
        return {**env(self, base_url), "LOOPD_HOME": str(data)}

    return patched


async def test_a_fifo_as_gits_config_does_not_block_a_write(tmp_path: Path) -> None:
    """Not in the issue: the write policy reads `.git/config` (for `core.hooksPath`)."""
    box = Box.make(tmp_path)
    git_repo(box)
    config = box.ws / ".git" / "config"
    config.unlink()
    os.mkfifo(config)
    with released(config) as blocked:
        run = await loopd_run(
            box,
            [calls(("write", {"path": "new.txt", "content": "x"})), Reply(text="done")],
            "--yes",
        )
    assert blocked == [] and run.code == 0, run.err
    assert (box.ws / "new.txt").read_text() == "x"


async def test_a_workspace_config_linked_to_the_environment_is_neither_read_nor_fatal(
    tmp_path: Path,
) -> None:
    """Not in the issue: the workspace's own `.loopd/config.toml`, read at every start
    and shown by the trust question, as a link to loopd's environment."""
    box = Box.make(tmp_path)
    (box.ws / ".loopd").mkdir()
    (box.ws / ".loopd" / "config.toml").symlink_to("/proc/self/environ")
    run = await loopd_run(box, [Reply(text="done")])
    assert run.code == 0, run.err
    assert "done" in run.out
    assert run.leaked() == [] and FAKE_KEY not in stored(box, box.base / "data")
    assert "config.toml" in run.err and "ignored" in run.err
