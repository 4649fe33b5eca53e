"""Context the person attaches in a prompt, through the real `loopd lsp` (native
engine, policy, the fake model over loopback): a mentioned file (its open buffer,
a line range), a folder (listed without its secrets) and an image reach the model's
request; a file outside the workspace, a secret, a link inside that leads out, and
a selection embedded from a secret are refused by the read tool's gates, and
nothing of them is sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home, home
from tests.e2e.conftest import LOOPD
from tests.e2e.lsp.conftest import Editor, Start, start

__all__ = ["home", "start"]

pytestmark = pytest.mark.e2e

PNG = (  # one pixel
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
SECRET = "API_KEY=sk-live-do-not-send"


def link(path: Path, fragment: str = "") -> dict[str, str]:
    return {"type": "resource_link", "uri": path.as_uri() + fragment, "name": path.name}


async def ask(editor: Editor, home: Home, *blocks: dict[str, Any]) -> dict[str, Any]:
    new = await editor.request("loopd/session/new", {"cwd": str(home.work), "mcpServers": []})
    prompt = [{"type": "text", "text": "look"}, *blocks]
    done = await editor.request(
        "loopd/session/prompt", {"sessionId": new["sessionId"], "prompt": prompt}
    )
    assert done["stopReason"] == "end_turn"
    body: dict[str, Any] = home.fake.requests[-1].body
    return body


def user_content(body: dict[str, Any]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = body["messages"][-1]["content"]
    return content


async def test_files_folders_and_images_the_person_attaches_reach_the_model(
    start: Start, home: Home
) -> None:
    work = home.work
    (work / "src").mkdir()
    (work / "src" / "app.py").write_text("line 1\nline 2\nline 3\nline 4\n")
    (work / "src" / ".env").write_text(SECRET)
    (work / "notes.md").write_text("on disk\n")
    home.fake.script("*", Reply(text="seen"))
    editor = await start({}, server=([*LOOPD, "lsp"], home.env()))
    editor.open(work / "notes.md", "unsaved in the editor\n")

    image = {"type": "image", "mimeType": "image/png", "data": PNG}
    body = await ask(
        editor, home, link(work / "src" / "app.py", "#L2-3"), link(work / "src"),
        link(work / "notes.md"), image,
    )  # fmt: skip
    texts = [b.get("text", "") for b in user_content(body) if b["type"] == "text"]
    joined = "\n".join(texts)
    assert "line 2\nline 3" in joined and "line 1" not in joined and "line 4" not in joined
    assert "Folder src:" in joined and "app.py" in joined
    assert ".env" not in joined and SECRET not in json.dumps(body), "a secret is not listed"
    assert "unsaved in the editor" in joined, "an open file is read as its buffer"
    picture = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    }
    blocks = [{k: v for k, v in b.items() if k != "cache_control"} for b in user_content(body)]
    assert picture in blocks


async def test_a_mention_outside_the_workspace_or_of_a_secret_is_refused(
    start: Start, home: Home, tmp_path: Path
) -> None:
    work = home.work
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE-CONTENT")
    (work / ".env").write_text(SECRET)
    (work / "id_rsa").write_text("PRIVATE-KEY-CONTENT")
    (work / "innocent.txt").symlink_to(outside)  # a link inside that leads out
    home.fake.script("*", Reply(text="seen"))
    editor = await start({}, server=([*LOOPD, "lsp"], home.env()))
    selection = {
        "type": "resource",
        "resource": {"uri": (work / ".env").as_uri() + "#L1", "text": SECRET},
    }
    body = await ask(
        editor, home, link(outside), link(work / ".env"), link(work / "id_rsa"),
        link(work / "innocent.txt"), link(work / "missing.txt"), selection,
    )  # fmt: skip
    sent = json.dumps(body)
    for content in ("OUTSIDE-CONTENT", SECRET, "sk-live", "PRIVATE-KEY-CONTENT"):
        assert content not in sent
    texts = [b.get("text", "") for b in user_content(body) if b["type"] == "text"]
    refused = [t for t in texts if "not read" in t or "not sent" in t]
    assert len(refused) == 6, texts
    assert any("outside the session's folders" in t for t in refused)
    assert any("no such file" in t for t in refused)
