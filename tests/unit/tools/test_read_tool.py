from pathlib import Path

import pytest
from tooltest import Call, RecordingProgress

from loopd.engine.ports import ToolCall
from loopd.protocol.events import Location
from loopd.tools import LocalFiles, ToolEnv, ToolLimits, ToolRegistry
from loopd.tools.access import FileTooLarge


@pytest.fixture
def numbers(tmp_path: Path) -> Path:
    path = tmp_path / "src" / "numbers.txt"
    path.parent.mkdir()
    path.write_text("".join(f"line {i}\n" for i in range(1, 11)))
    return path


async def test_reads_numbered_lines_and_declares_the_canonical_path(
    call: Call, env: ToolEnv, numbers: Path
) -> None:
    out = await call("read", path="src/numbers.txt")
    canonical = f"{env.cwd}/src/numbers.txt"
    assert out.declaration.title == "Read src/numbers.txt"
    assert out.declaration.kind == "read"
    assert out.declaration.reads == (canonical,)
    assert out.declaration.writes == ()
    assert out.declaration.locations == (Location(canonical, 1),)
    assert out.result.output.splitlines()[0] == "     1\tline 1"
    assert out.result.output.splitlines()[-1] == "    10\tline 10"
    assert not out.result.is_error


async def test_offset_and_limit_select_a_window_and_say_how_to_continue(
    call: Call, numbers: Path
) -> None:
    out = await call("read", path="src/numbers.txt", offset=4, limit=3)
    assert out.result.output == (
        "     4\tline 4\n     5\tline 5\n     6\tline 6\n"
        "[Showing lines 4-6 of 10. Use offset=7 to read more.]"
    )
    assert out.result.locations[0].line == 4


async def test_offset_past_the_end_is_an_error_naming_the_length(call: Call, numbers: Path) -> None:
    out = await call("read", path="src/numbers.txt", offset=11)
    assert out.result.is_error
    assert "offset 11 is past the end of src/numbers.txt, which has 10 lines" in out.result.output


async def test_caps_lines_line_length_and_total_size(tmp_path: Path) -> None:

    (tmp_path / "wide.txt").write_text("x" * 50 + "\n" + "short\n" * 100)
    limits = ToolLimits(read_default_lines=5, read_max_line_chars=10, read_max_chars=40)
    env = ToolEnv(roots=(str(tmp_path),), limits=limits)
    result = await ToolRegistry(env).run(
        ToolCall("c1", "read", {"path": "wide.txt"}), RecordingProgress()
    )
    lines = result.output.splitlines()
    assert lines[0] == "     1\txxxxxxxxxx [... line cut, 40 more characters]"
    assert lines[-1] == "[Showing lines 1-1 of 101. Use offset=2 to read more.]"
    result = await ToolRegistry(env).run(
        ToolCall("c1", "read", {"path": "wide.txt", "offset": 2}), RecordingProgress()
    )
    assert result.output.splitlines()[-1] == (
        "[Showing lines 2-4 of 101. Use offset=5 to read more.]"
    )
    await env.aclose()


async def test_refuses_binary_files(call: Call, tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02")
    out = await call("read", path="blob.bin")
    assert out.result.is_error
    assert "binary or non-UTF-8" in out.result.output


async def test_refuses_files_over_the_byte_cap(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("a" * 100)
    with pytest.raises(FileTooLarge, match="over the 10-byte limit"):
        await LocalFiles(max_bytes=10).read_text(str(tmp_path / "big.txt"))


async def test_missing_file_and_directory_are_errors(call: Call, tmp_path: Path) -> None:
    missing = await call("read", path="nope.txt")
    assert missing.result.is_error
    assert "No such file or directory" in missing.result.output
    (tmp_path / "dir").mkdir()
    directory = await call("read", path="dir")
    assert directory.result.is_error


async def test_empty_file_says_so(call: Call, tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    out = await call("read", path="empty.txt")
    assert out.result.output == "empty.txt is empty."
    assert not out.result.is_error


async def test_reads_through_the_env_file_access(tmp_path: Path) -> None:
    """The editor's unsaved buffer wins over the disk when the adapter plugs it in."""

    class Buffers:
        async def read_text(self, path: str) -> str:
            return "unsaved\n"

        async def write_text(self, path: str, text: str) -> None:
            raise AssertionError("not written")

    env = ToolEnv(roots=(str(tmp_path),), files=Buffers())
    result = await ToolRegistry(env).run(
        ToolCall("c1", "read", {"path": "a.py"}), RecordingProgress()
    )
    assert result.output == "     1\tunsaved"
    await env.aclose()
