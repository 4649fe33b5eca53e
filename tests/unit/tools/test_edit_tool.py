# ruff: noqa: ASYNC240 -- tests read the files they made in tmp_path
from pathlib import Path

import pytest
from tooltest import Call, RecordingProgress

from loopd.engine.ports import ToolCall
from loopd.protocol.errors import ToolInputError, ToolUnusable
from loopd.protocol.events import DiffContent, Location
from loopd.tools import ToolEnv, ToolRegistry


async def test_write_creates_parent_dirs_and_previews_a_new_file(
    call: Call, env: ToolEnv, tmp_path: Path
) -> None:
    out = await call("write", path="a/b/new.py", content="x = 1\n")
    path = f"{env.cwd}/a/b/new.py"
    assert (tmp_path / "a/b/new.py").read_text() == "x = 1\n"
    assert out.declaration.title == "Create a/b/new.py"
    assert out.declaration.kind == "edit"
    assert out.declaration.writes == (path,)
    assert out.declaration.preview == (DiffContent(path, None, "x = 1\n"),)
    assert out.result.content == (DiffContent(path, None, "x = 1\n"),)
    assert out.result.output == "Created a/b/new.py (1 lines)."


async def test_write_over_a_file_previews_old_to_new(
    call: Call, env: ToolEnv, tmp_path: Path
) -> None:
    (tmp_path / "f.txt").write_text("old\n")
    await call("read", path="f.txt")
    out = await call("write", path="f.txt", content="new\n")
    path = f"{env.cwd}/f.txt"
    assert out.declaration.title == "Write f.txt"
    assert out.declaration.preview == (DiffContent(path, "old\n", "new\n"),)
    assert (tmp_path / "f.txt").read_text() == "new\n"


@pytest.fixture
async def source(call: Call, tmp_path: Path) -> Path:
    """A file the agent has read, so it may change it."""
    path = tmp_path / "m.py"
    path.write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    await call("read", path="m.py")
    return path


async def test_edit_replaces_exactly_one_match_with_a_diff_and_line(
    call: Call, env: ToolEnv, source: Path
) -> None:
    before = source.read_text()
    out = await call(
        "edit",
        path="m.py",
        old_string="def g():\n    return 1",
        new_string="def g():\n    return 2",
    )
    after = source.read_text()
    path = f"{env.cwd}/m.py"
    assert after == "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    assert out.declaration.title == "Edit m.py"
    assert out.declaration.reads == (path,)
    assert out.declaration.writes == (path,)
    assert out.declaration.preview == (DiffContent(path, before, after),)
    assert out.declaration.locations == (Location(path, 5),)
    assert out.result.content == (DiffContent(path, before, after),)
    assert out.result.locations == (Location(path, 5),)
    assert out.result.output == "Edited m.py: replaced 1 occurrence (line 5)."


async def test_edit_with_no_match_fails_and_changes_nothing(call: Call, source: Path) -> None:
    before = source.read_text()
    out = await call("edit", path="m.py", old_string="return 3", new_string="return 4")
    assert out.result.is_error
    assert "old_string was not found in m.py" in out.result.output
    assert "including whitespace and indentation" in out.result.output
    assert out.declaration.preview == ()
    assert source.read_text() == before


async def test_edit_with_two_matches_fails_naming_the_count(call: Call, source: Path) -> None:
    before = source.read_text()
    out = await call("edit", path="m.py", old_string="return 1", new_string="return 2")
    assert out.result.is_error
    assert "old_string occurs 2 times in m.py" in out.result.output
    assert "replace_all" in out.result.output
    assert out.declaration.preview == ()
    assert source.read_text() == before


async def test_edit_replace_all_changes_every_match(call: Call, source: Path) -> None:
    out = await call(
        "edit", path="m.py", old_string="return 1", new_string="return 0", replace_all=True
    )
    assert source.read_text().count("return 0") == 2
    assert out.result.output == "Edited m.py: replaced 2 occurrences (first at line 2)."
    assert len(out.declaration.preview) == 1


async def test_edit_of_a_missing_file_points_at_write(call: Call) -> None:
    out = await call("edit", path="ghost.py", old_string="a", new_string="b")
    assert out.result.is_error
    assert "ghost.py does not exist; use write to create a file" in out.result.output


async def test_edit_with_identical_strings_is_bad_input(tools: ToolRegistry, source: Path) -> None:
    call = ToolCall("c1", "edit", {"path": "m.py", "old_string": "f", "new_string": "f"})
    with pytest.raises(ToolInputError, match="identical"):
        await tools.declare(call)


async def test_edit_declared_before_an_earlier_edit_applies_still_runs(
    tools: ToolRegistry, source: Path
) -> None:
    """Two edits in one step are both declared before either runs."""
    first = ToolCall("c1", "edit", {"path": "m.py", "old_string": "def g", "new_string": "def h"})
    second = ToolCall("c2", "edit", {"path": "m.py", "old_string": "def h", "new_string": "def k"})
    assert (await tools.declare(first)).preview
    assert (await tools.declare(second)).preview == ()
    assert not (await tools.run(first, RecordingProgress())).is_error
    assert not (await tools.run(second, RecordingProgress())).is_error
    assert "def k():" in source.read_text()


async def test_edit_keeps_a_crlf_file_crlf(call: Call, tmp_path: Path) -> None:
    path = tmp_path / "dos.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await call("read", path="dos.txt")
    out = await call("edit", path="dos.txt", old_string="one\ntwo", new_string="1\n2")
    assert not out.result.is_error
    assert path.read_bytes() == b"1\r\n2\r\nthree\r\n"


# -- fresh files: no change to a file the agent has not seen as it is -----------------


async def refused_unasked(tools: ToolRegistry, name: str, **args: object) -> str:
    """Why declaring the call refused it: before any approval could be asked."""
    with pytest.raises(ToolUnusable) as refused:
        await tools.declare(ToolCall("c1", name, args))
    return str(refused.value)


async def test_a_file_never_read_is_refused_then_accepted_after_a_read(
    call: Call, tools: ToolRegistry, tmp_path: Path
) -> None:
    (tmp_path / "f.txt").write_text("theirs\n")
    for name, args in (
        ("write", {"content": "mine\n"}),
        ("edit", {"old_string": "theirs", "new_string": "mine"}),
    ):
        refusal = await refused_unasked(tools, name, path="f.txt", **args)
        assert "you have not read it yet: read it first" in refusal
        assert (tmp_path / "f.txt").read_text() == "theirs\n"
    await call("read", path="f.txt")
    assert not (await call("write", path="f.txt", content="mine\n")).result.is_error
    assert (tmp_path / "f.txt").read_text() == "mine\n"


async def test_a_file_changed_since_the_read_is_refused_until_read_again(
    call: Call, tools: ToolRegistry, tmp_path: Path
) -> None:
    target = tmp_path / "f.txt"
    target.write_text("a = 1\n")
    await call("read", path="f.txt")
    target.write_text("a = 1\nb = 2\n")  # the person (or a command) changed it
    stale = await refused_unasked(
        tools, "edit", path="f.txt", old_string="a = 1", new_string="a = 3"
    )
    assert "changed since you last read it" in stale
    assert target.read_text() == "a = 1\nb = 2\n"
    await call("read", path="f.txt")
    fresh = await call("edit", path="f.txt", old_string="a = 1", new_string="a = 3")
    assert not fresh.result.is_error
    assert target.read_text() == "a = 3\nb = 2\n"


async def test_its_own_changes_keep_a_file_fresh_and_new_files_need_no_read(
    call: Call, tmp_path: Path
) -> None:
    assert not (await call("write", path="new.txt", content="x = 1\n")).result.is_error
    edit = await call("edit", path="new.txt", old_string="x = 1", new_string="x = 2")
    assert not edit.result.is_error
    again = await call("edit", path="new.txt", old_string="x = 2", new_string="x = 3")
    assert not again.result.is_error
    assert (tmp_path / "new.txt").read_text() == "x = 3\n"


async def test_a_changed_file_is_told_once(call: Call, env: ToolEnv, tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("one\n")
    await call("read", path="f.txt")

    def now() -> dict[str, str | None]:
        return {p: Path(p).read_text() if Path(p).exists() else None for p in env.reads.tracked()}

    assert env.reads.changes(now()) == []
    target.write_text("two\n")
    assert env.reads.changes({}) == [], "a file that could not be read is not judged"
    (told,) = env.reads.changes(now())
    assert f"{env.cwd}/f.txt changed since you last read it" in told
    assert env.reads.changes(now()) == []
    target.unlink()
    assert env.reads.changes(now()) == [f"{env.cwd}/f.txt was deleted since you read it."]
