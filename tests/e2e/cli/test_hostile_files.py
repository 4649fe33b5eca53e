"""`loopd run` whose model points the file tools at what is not a file: a FIFO, a
socket, a link to a device, a path with a NUL byte. Every such call ends as a tool
result the model reads, and the turn ends normally (exit 0), never with a
traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.conftest import LOOPD, isolated_env

pytestmark = pytest.mark.e2e

CALLS: dict[str, tuple[str, dict[str, Any], str]] = {
    "write_fifo": ("write", {"path": "pipe", "content": "x"}, "named pipe"),
    "edit_fifo": ("edit", {"path": "pipe", "old_string": "a", "new_string": "b"}, "named pipe"),
    "read_fifo": ("read", {"path": "pipe"}, "named pipe"),
    "write_nul": ("write", {"path": "a\0b", "content": "x"}, "NUL"),
    "write_socket": ("write", {"path": "sock", "content": "x"}, "socket"),
    "edit_socket": ("edit", {"path": "sock", "old_string": "a", "new_string": "b"}, "socket"),
    "read_socket": ("read", {"path": "sock"}, "socket"),
    "read_device": ("read", {"path": "zero"}, "device"),
    "grep_fifo": ("grep", {"pattern": "x", "path": "pipe"}, "named pipe"),
}


@pytest.mark.parametrize("case", sorted(CALLS))
def test_a_call_on_what_is_not_a_file_is_a_tool_result(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path, case: str
) -> None:
    tool, arguments, said = CALLS[case]
    os.mkfifo(workspace / "pipe")
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(workspace / "sock"))  # the file stays once it is closed
    (workspace / "zero").symlink_to("/dev/zero")  # never ends: a read must not start
    fake_llm.script("*", Reply(tool_calls=(ScriptedCall(tool, arguments),)), Reply(text="ok"))
    done = subprocess.run(
        [*LOOPD, "run", "go", "--yes"], env=isolated_env(tmp_path, fake_llm), cwd=workspace,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    answer = fake_llm.requests[1].body["messages"][-1]
    assert said in json.dumps(answer), answer
    assert done.stdout.strip() == "ok"


SWAPPED = '''\
import errno, os

_readlink = os.readlink


def readlink(path, *args, **kwargs):
    """The kernel's answer when a symlink is swapped for a folder between realpath's
    lstat and its readlink: made certain here for links named `swap`."""
    if os.fspath(path).endswith("/swap"):
        raise OSError(errno.EINVAL, "Invalid argument", os.fspath(path))
    return _readlink(path, *args, **kwargs)


os.readlink = readlink
'''


@pytest.mark.parametrize("tool", ["write", "read", "edit"])
def test_a_link_swapped_while_it_is_resolved_is_a_refusal(
    fake_llm: FakeLLMServer, workspace: Path, tmp_path: Path, tool: str
) -> None:
    """realpath raises (EINVAL) when a link changes kind as it walks it; `loopd run`
    died with that OSError's traceback. Now the call is refused and the turn goes on."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SWAPPED)
    (workspace / "src").mkdir()
    (workspace / "swap").symlink_to("src")
    arguments = {
        "write": {"content": "x"},
        "read": {},
        "edit": {"old_string": "a", "new_string": "b"},
    }
    call = ScriptedCall(tool, {"path": "swap/a.py", **arguments[tool]})
    fake_llm.script("*", Reply(tool_calls=(call,)), Reply(text="ok"))
    env = isolated_env(tmp_path, fake_llm)
    env["PYTHONPATH"] = f"{hook}:{env['PYTHONPATH']}"
    done = subprocess.run(
        [*LOOPD, "run", "go", "--yes"], env=env, cwd=workspace,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    answer = json.dumps(fake_llm.requests[1].body["messages"][-1])
    assert "changed while it was resolved" in answer, answer
    assert not (workspace / "src" / "a.py").exists()
