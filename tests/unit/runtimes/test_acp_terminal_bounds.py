"""The pure parts of serving a child's terminals, and the per-session cap: a
command line from ACP's command and args, the child's variables filtered, output
within a byte limit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopd.policy.paths import PathPolicy
from loopd.protocol.events import SessionEvent
from loopd.runtimes.acp.terminals import (
    AcpTerminals,
    TerminalRefused,
    command_line,
    exports,
    within,
)
from loopd.sandbox.base import Unsandboxed
from loopd.tools.env import SystemClock, ToolLimits
from loopd.tools.output import HeadTail


def test_args_are_quoted_into_the_line() -> None:
    assert command_line("ls -la | head", []) == "ls -la | head"
    assert command_line("printf", ["%s\n", "a b; rm -rf ~"]) == "printf '%s\n' 'a b; rm -rf ~'"


def test_variables_are_exported_except_secrets() -> None:
    base = {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "sk-ant-0123456789", "HOME": "/home/u"}
    child = {
        "CI": "1",
        "MSG": "it's $HOME",
        "GITHUB_TOKEN": "x",
        "Db_Password": "y",
        "ALIAS": "sk-ant-0123456789",
        "HEADER": "Bearer sk-ant-0123456789",
        "bad-name": "z",
        "PATH": "/usr/bin",  # a harmless value of loopd's own
    }
    prefix, dropped = exports(child, base)
    assert prefix == "export CI=1 MSG='it'\"'\"'s $HOME' PATH=/usr/bin; "
    assert set(dropped) == {"GITHUB_TOKEN", "Db_Password", "ALIAS", "HEADER", "bad-name"}
    assert exports({}, base) == ("", ())


def test_output_fits_the_byte_limit() -> None:
    out = HeadTail(10_000)
    out.append("".join(f"{i}\n" for i in range(3000)))
    text, cut = within(out, 1000)
    assert cut and len(text.encode()) <= 1000
    assert text.startswith("0\n1\n") and text.endswith("2999\n")
    small, cut = within(out, 40)  # no room for the note: the tail, as ACP says
    assert cut and small.endswith("2999\n") and len(small.encode()) <= 40
    wide = HeadTail(10_000)
    wide.append("é" * 600)  # 1200 bytes
    text, cut = within(wide, 500)
    assert cut and len(text.encode()) <= 500
    short = HeadTail(100)
    short.append("ok\n")
    assert within(short, 1000) == ("ok\n", False)


class Admit:
    async def admit(self, line: str, cwd: str, card: str) -> bool:
        return False


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(tmp_path.resolve())


async def test_a_session_holds_at_most_its_cap(root: str) -> None:
    shown: list[SessionEvent] = []

    async def emit(event: SessionEvent) -> None:
        shown.append(event)

    terminals = AcpTerminals(
        gate=Admit(),
        sandbox=lambda: Unsandboxed({"PATH": os.environ["PATH"]}),
        paths=PathPolicy((root,), root),
        base_env={},
        limits=ToolLimits(),
        clock=SystemClock(),
        emit=emit,
        max_terminals=2,
    )
    try:
        first = await terminals.create("sleep 1234.7")
        await terminals.create("true")
        with pytest.raises(TerminalRefused, match="at most 2 terminals"):
            await terminals.create("true")
        await terminals.release(first)  # a released one frees its place
        await terminals.create("true")
    finally:
        await terminals.aclose()
    with pytest.raises(TerminalRefused, match="closed"):
        await terminals.create("true")
