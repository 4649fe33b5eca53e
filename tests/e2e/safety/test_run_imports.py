"""Not named in the issue: Python modules are programs too. `python -m loopd` puts
the folder it starts in first on `sys.path`, and editors start loopd in the
workspace folder (VS Code's fallback runs the Python extension's interpreter with
`-m loopd lsp`): a repository's `pygls/`, `acp/` or `typing.py` was imported in
place of the real one, outside any sandbox, with the person's keys. Each frontend,
started so in a workspace that plants them, imports none of them."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from acp.schema import TextContentBlock

from loopd.testing.fake_llm import FakeLLMServer, Reply
from tests.e2e.lsp.conftest import Start, start
from tests.e2e.safety.conftest import Box, acp_connection, loopd_run
from tests.unit.acp.conftest import RecordingClient

__all__ = ["start"]

pytestmark = pytest.mark.e2e

SHADOWS = ("pygls/__init__.py", "acp/__init__.py", "typing.py", "httpx/__init__.py")


def plant(box: Box) -> list[Path]:
    """Modules in the workspace's root that leave a mark when imported."""
    marks = []
    for name in SHADOWS:
        mark = box.base / f"imported-{name.split('/')[0]}"
        module = box.ws / name
        module.parent.mkdir(exist_ok=True)
        module.write_text(f"open({str(mark)!r}, 'w').close()\n")
        marks.append(mark)
    return marks


async def test_loopd_run_imports_nothing_from_the_workspace(tmp_path: Path) -> None:
    box = Box.make(tmp_path)
    marks = plant(box)
    run = await loopd_run(box, [Reply(text="done")])
    assert run.code == 0, run.err
    assert [m.name for m in marks if m.exists()] == []


async def test_loopd_acp_imports_nothing_from_the_workspace(tmp_path: Path) -> None:
    box = Box.make(tmp_path)
    marks = plant(box)
    with FakeLLMServer() as fake:
        fake.script("*", Reply(text="done"))
        async with acp_connection(box, RecordingClient(), fake.base_url) as conn:
            session = await conn.new_session(cwd=str(box.ws), mcp_servers=[])
            done = await conn.prompt(
                session_id=session.session_id, prompt=[TextContentBlock(type="text", text="go")]
            )
    assert done.stop_reason == "end_turn"
    assert [m.name for m in marks if m.exists()] == []


async def test_loopd_lsp_imports_nothing_from_the_workspace(start: Start, tmp_path: Path) -> None:
    box = Box.make(tmp_path / "box")
    marks = plant(box)
    with FakeLLMServer() as fake:
        fake.script("*", Reply(text="done"))
        argv = ["sh", "-c", f'cd "{box.ws}" && exec "{sys.executable}" -m loopd lsp']
        editor = await start({}, server=(argv, box.env(fake.base_url)))
        new = await editor.request("loopd/session/new", {"cwd": str(box.ws), "mcpServers": []})
        done = await editor.request(
            "loopd/session/prompt",
            {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "go"}]},
        )
    assert done["stopReason"] == "end_turn"
    assert [m.name for m in marks if m.exists()] == []


SCRIPT = Path(sys.executable).parent / "loopd"


@pytest.mark.skipif(not SCRIPT.exists(), reason="no `loopd` script beside this interpreter")
async def test_the_loopd_script_with_an_empty_pythonpath_entry_imports_nothing(
    tmp_path: Path,
) -> None:
    """The installed `loopd` script puts its own folder first, but an editor's
    PYTHONPATH ending in `:` names the folder loopd starts in all the same."""
    box = Box.make(tmp_path)
    marks = plant(box)
    with FakeLLMServer() as fake:
        fake.script("*", Reply(text="done"))
        env = box.env(fake.base_url)
        env["PYTHONPATH"] += ":"
        proc = await asyncio.create_subprocess_exec(
            str(SCRIPT), "run", "go", cwd=box.ws, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert b"done" in out
    assert [m.name for m in marks if m.exists()] == []
