"""stdout carries protocol messages only: a stray print after `protect_stdout` goes
to stderr (both `loopd acp` and `loopd lsp` on stdio call it before anything else)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"
SNIPPET = """
from loopd.streams.stdio import protect_stdout
out = protect_stdout()
print("a stray print from some library")
out.write(b'{"jsonrpc":"2.0"}\\n')
"""


def test_a_stray_print_never_reaches_the_protocol_channel() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SNIPPET],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SERVER)},
        timeout=30,
        check=True,
    )
    assert done.stdout == '{"jsonrpc":"2.0"}\n'
    assert "a stray print from some library" in done.stderr
