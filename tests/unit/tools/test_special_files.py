# ruff: noqa: ASYNC240 -- the tests set up real FIFOs, sockets and files in tmp_path
"""FIFOs, sockets and devices never hang a file tool, and huge lines or files cost a
bounded amount of memory.

Opening a FIFO for reading blocks until a writer comes, in a worker thread that no
signal reaches, so one `mkfifo` used to hang the session for good. Every case here
runs under a short timeout, and a fixture opens each FIFO for writing at the end, so
a regression fails the test instead of hanging the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from tooltest import RecordingProgress

from loopd.engine.ports import ToolCall, ToolResult
from loopd.policy.beneath import NotRegularFile, read_bytes_beneath, write_text_beneath
from loopd.policy.paths import PathPolicy
from loopd.tools import ToolEnv, ToolRegistry
from loopd.tools.access import LocalFiles
from loopd.tools.files import BeneathFiles
from loopd.tools.grep import Grep
from loopd.tools.registry import builtin_tools

RG = shutil.which("rg")
BOUND = 5.0  # seconds; each call takes milliseconds when it does not block


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    """A workspace holding a FIFO, a unix socket and a normal file."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.txt").write_text("needle here\n")
    os.mkfifo(ws / "pipe")
    os.mkfifo(ws / "sub" / "deep.pipe")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(ws / "sock"))
    try:
        yield ws
    finally:
        listener.close()
        for fifo in (ws / "pipe", ws / "sub" / "deep.pipe"):
            with contextlib.suppress(OSError):  # release a reader a regression left blocked
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


@pytest.fixture(params=["beneath", "local"])
async def tools(request: pytest.FixtureRequest, ws: Path, tmp_path: Path) -> ToolRegistry:
    """Both file accesses: the production one (beneath the roots) and the plain one."""
    root = str(ws.resolve())
    files = (
        BeneathFiles(PathPolicy((root,), str(tmp_path)))
        if request.param == "beneath"
        else LocalFiles()
    )
    env = ToolEnv(roots=(root,), files=files)
    grep = Grep(RG) if RG else Grep(None)
    chosen = [t for t in builtin_tools() if t.name != "grep"] + [grep]
    return ToolRegistry(env, chosen)


async def run(tools: ToolRegistry, name: str, **args: object) -> ToolResult:
    async with asyncio.timeout(BOUND):
        return await tools.run(ToolCall("c1", name, args), RecordingProgress())


@pytest.mark.parametrize("path", ["pipe", "sub/deep.pipe", "sock"])
async def test_read_and_edit_refuse_a_fifo_or_socket_at_once(
    tools: ToolRegistry, path: str
) -> None:
    read = await run(tools, "read", path=path)
    assert read.is_error
    assert "not a regular file" in read.output
    edit = await run(tools, "edit", path=path, old_string="a", new_string="b")
    assert edit.is_error and "not a regular file" in edit.output


async def test_write_refuses_to_replace_a_fifo(tools: ToolRegistry, ws: Path) -> None:
    result = await run(tools, "write", path="pipe", content="x")
    assert result.is_error and "not a regular file" in result.output
    assert (ws / "pipe").is_fifo()  # left as it was


@pytest.mark.parametrize("backend", ["ripgrep", "python"])
async def test_grep_skips_fifos_in_a_tree_and_refuses_one_as_its_root(
    ws: Path, backend: str
) -> None:
    if backend == "ripgrep" and RG is None:
        pytest.skip("ripgrep (rg) is not on PATH; CI installs it via scripts/setup.sh")
    tools = ToolRegistry(ToolEnv(roots=(str(ws),)), [Grep(RG if backend == "ripgrep" else None)])
    found = await run(tools, "grep", pattern="needle")
    assert found.output == "sub/a.txt:1: needle here"
    refused = await run(tools, "grep", pattern="needle", path="pipe")
    assert refused.is_error and "named pipe (FIFO)" in refused.output


async def test_glob_lists_a_fifo_without_opening_it(tools: ToolRegistry) -> None:
    result = await run(tools, "glob", pattern="**/*pipe")
    assert result.output.splitlines() == ["pipe", "sub/deep.pipe"]


def test_beneath_refuses_a_character_device_without_reading_it() -> None:
    with pytest.raises(NotRegularFile, match="character device"):
        read_bytes_beneath("/dev", "/dev/zero")  # would never end if read


def test_beneath_write_never_replaces_a_fifo(ws: Path) -> None:
    with pytest.raises(NotRegularFile, match="FIFO"):
        write_text_beneath(str(ws), "pipe", "x")
    assert (ws / "pipe").is_fifo()


@pytest.mark.parametrize("backend", ["ripgrep", "python"])
async def test_grep_over_a_huge_line_keeps_memory_and_output_bounded(
    tmp_path: Path, backend: str
) -> None:
    """A 5 MB line: the Python backend searches its first MiB; ripgrep's JSON line for
    it is over the reader's limit and is dropped. Either way the call ends, the other
    matches come through, and nothing huge is returned."""
    if backend == "ripgrep" and RG is None:
        pytest.skip("ripgrep (rg) is not on PATH; CI installs it via scripts/setup.sh")
    (tmp_path / "huge.txt").write_text("needle" + "x" * 5_000_000 + "\nneedle again\n")
    tools = ToolRegistry(
        ToolEnv(roots=(str(tmp_path),)), [Grep(RG if backend == "ripgrep" else None)]
    )
    result = await run(tools, "grep", pattern="needle")
    assert not result.is_error
    assert "huge.txt:2: needle again" in result.output
    assert len(result.output) < 2_000
