"""The escape suite through `loopd acp`, driven by the Python SDK client: the client
answers the permission requests, and sees every refusal with its reason in the tool
call updates."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from acp.schema import (
    FileSystemCapabilities,
)

from loopd.testing.fake_llm import Reply
from tests.e2e.safety.conftest import (
    DOTENV,
    PLANTED,
    PLANTED_FILES,
    SECRETS,
    Box,
    Listener,
    assert_nothing_planted,
    calls,
    git_repo,
    loopd_acp,
    needs_bwrap,
    planting,
)
from tests.unit.acp.conftest import EditorClient, RecordingClient

pytestmark = pytest.mark.e2e


def tool_texts(client: RecordingClient, status: str) -> str:
    return "\n".join(
        item["content"].get("text", "")
        for u in client.of("tool_call_update")
        if u.get("status") == status
        for item in u.get("content") or []
        if item.get("type") == "content"
    )


async def test_acp_escapes_are_blocked_and_reported(tmp_path: Path, listener: Listener) -> None:
    box = Box.make(tmp_path)
    script = [
        calls(
            ("read", {"path": ".env"}),
            ("read", {"path": str(box.home / ".ssh" / "id_rsa")}),
            ("write", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
            ("write", {"path": "link/x.txt", "content": "pwn"}),
        ),
        calls(
            ("bash", {"command": "env; cat .env; true"}),
            ("bash", {"command": f"exec 3<>/dev/tcp/127.0.0.1/{listener.port} && echo UP"}),
        ),
        Reply(text="done"),
    ]
    client = RecordingClient(answers=["reject_once", "reject_once"])
    run = await loopd_acp(box, client, script)
    bodies = run.bodies

    assert run.stop_reason == "end_turn"
    asked = [tool_call.title for tool_call, _ in client.permissions]
    assert asked == ["Create .git/hooks/pre-commit", f"Write {box.outside / 'x.txt'}"]
    failed = tool_texts(client, "failed")
    assert "Denied by policy: reading is refused: .env looks like a secret" in failed
    assert "Denied by policy: reading is refused: id_rsa looks like a secret" in failed
    assert failed.count("The user rejected this call.") == 2
    assert list(box.outside.iterdir()) == []
    assert list((box.ws / ".git" / "hooks").iterdir()) == []
    assert listener.accepted == []
    shown = json.dumps(client.updates)
    for secret in SECRETS:
        assert secret not in shown
        assert secret not in bodies
    assert client.text() == "done"


@needs_bwrap
async def test_acp_full_auto_cannot_plant_code_for_later(tmp_path: Path) -> None:
    """The same planting as through `loopd run`: the write tool is refused, commands
    meet read-only placeholders and a pinned git directory."""
    box = Box.make(tmp_path)
    git_repo(box)
    client = RecordingClient()
    run = await loopd_acp(
        box, client, [calls(*planting(box)), Reply(text="done")], mode="full_auto"
    )
    assert run.stop_reason == "end_turn"
    assert client.permissions == []  # full auto asks nothing: it refuses
    failed = tool_texts(client, "failed")
    for rel in (*PLANTED, *PLANTED_FILES):
        assert not (box.ws / rel).exists(), rel
        assert rel.split("/")[0] + "/ is protected" in failed or f"{rel} is protected" in failed
    assert_nothing_planted(box)


async def test_a_secret_is_decided_before_it_is_read_through_the_editor(tmp_path: Path) -> None:
    """`write .env` in full auto: refused, and the editor's buffer of `.env` is never
    read for the diff preview, so it reaches neither the editor's diff, the store,
    nor the model."""
    box = Box.make(tmp_path)
    buffers = {
        str(box.ws / ".env"): "TOKEN=unsaved-buffer-s3cret-93",
        str(box.ws / "notes.txt"): "notes-buffer-77\n",
    }
    client = EditorClient(buffers=buffers)
    script = [
        calls(
            ("write", {"path": ".env", "content": "TOKEN=new\n"}),
            ("edit", {"path": ".env", "old_string": "TOKEN", "new_string": "X"}),
            ("read", {"path": "notes.txt"}),
        ),
        Reply(text="done"),
    ]
    fs = FileSystemCapabilities(read_text_file=True, write_text_file=True)
    bodies = (await loopd_acp(box, client, script, fs=fs, mode="full_auto")).bodies
    assert client.read_paths == [str(box.ws / "notes.txt")]  # .env never asked for
    assert client.writes == []
    assert (box.ws / ".env").read_text() == DOTENV + "\n"
    db = sqlite3.connect(box.base / "data" / "sessions.db")
    stored = json.dumps(db.execute("SELECT * FROM events").fetchall())
    db.close()
    assert "notes-buffer-77" in stored  # the store holds what was read through the editor
    for text in (json.dumps(client.updates), bodies, stored):
        for secret in (*SECRETS, "unsaved-buffer-s3cret-93"):
            assert secret not in text
