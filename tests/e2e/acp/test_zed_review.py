"""Edits through the editor, as Zed reviews them: the real `loopd acp` and a client
shaped like Zed (it advertises `fs.writeTextFile` and saves each write itself, to the
path it is given, following symlinks); and the model's own racing swapper, started as
a background command, against those edits."""

from __future__ import annotations

import json
import shlex

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, loopd_acp, text
from tests.e2e.acp.editor import ZedEditor
from tests.e2e.acp.test_loopd_acp import FS
from tests.unit.acp.swapping import SWAP_LOOP, plant_link

pytestmark = pytest.mark.e2e

ESCAPED = ("outside the session's folders", "leaves the", "through a symlink")


async def test_edits_arrive_through_the_editors_write_text_file(home: Home) -> None:
    target, new = home.work / "a.py", home.work / "pkg" / "new.py"
    target.write_text("x = 1\n")
    edit = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("read", {"path": "a.py"}),)),
        Reply(
            tool_calls=(
                ScriptedCall("edit", edit),
                ScriptedCall("write", {"path": "pkg/new.py", "content": "y = 3\n"}),
            )
        ),
        Reply(text="done"),
    )
    client = ZedEditor(answers=["allow_once"] * 2)
    async with loopd_acp(home, client, FS) as conn:
        new_session = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        await conn.prompt(session_id=new_session.session_id, prompt=text("edit"))
    assert client.writes == [(str(target), "x = 2\n"), (str(new), "y = 3\n")]
    assert (target.read_text(), new.read_text()) == ("x = 2\n", "y = 3\n")
    statuses = [u.get("status") for u in client.of("tool_call_update") if u.get("status")]
    assert statuses.count("completed") == 3


async def test_the_models_racing_swapper_leaks_nothing_through_the_editor(home: Home) -> None:
    """In full auto, the model starts a background command that flips `d` with a
    link to the person's ~/.aws, then writes files in `d` again and again: while the
    command runs the editor is never handed a path (each write lands beneath the
    workspace, or is refused as outside it), and nothing in ~/.aws changes."""
    real = home.work / "d"
    real.mkdir()
    private = home.root / ".aws"
    private.mkdir()
    (private / "config").write_text("SECRET\n")
    plant_link(real, private)
    swapper = f"python3 -c {shlex.quote(SWAP_LOOP)} d swap-link 0.0005"
    writes = tuple(
        ScriptedCall("write", {"path": f"d/new{i}.txt", "content": f"edit {i}\n"})
        for i in range(12)
    )
    home.fake.script(
        "*",
        Reply(tool_calls=(ScriptedCall("write", {"path": "before.txt", "content": "b\n"}),)),
        Reply(tool_calls=(ScriptedCall("bash", {"command": swapper, "background": True}),)),
        Reply(tool_calls=writes),
        Reply(text="done"),
    )
    client = ZedEditor()
    async with loopd_acp(home, client, FS) as conn:
        session = await conn.new_session(cwd=str(home.work), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="full_auto")
        await conn.prompt(session_id=session.session_id, prompt=text("race"))
    assert client.writes == [(str(home.work / "before.txt"), "b\n")]  # the route works
    assert {p.name: p.read_text() for p in private.iterdir()} == {"config": "SECRET\n"}
    ended = [u for u in client.of("tool_call_update") if u.get("status") in ("completed", "failed")]
    assert [u["status"] for u in ended[:2]] == ["completed", "completed"]  # the swapper runs
    landed = [u for u in ended[2:] if u["status"] == "completed"]
    refused = [json.dumps(u) for u in ended[2:] if u["status"] == "failed"]
    assert len(landed) + len(refused) == 12
    # refused by the policy (the path led outside) or by the beneath-open (it did by
    # the time loopd opened it): never by anything the editor did
    assert all(any(w in r for w in ESCAPED) for r in refused), refused
    folder = real if not real.is_symlink() else home.work / "swap-link"
    assert len(list(folder.glob("new*.txt"))) == len(landed)
