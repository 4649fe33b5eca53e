"""`EditorClient`: an ACP client with an editor's own files and terminals.

Files: `buffers` are open editor buffers (unsaved content wins over the disk, as in
Zed); every write is recorded and lands in the buffer, never on the disk (the person
would review and save it). `ZedEditor` saves a write as Zed does: to the path it is
given, resolved on its own (symlinks followed), in place. Terminals: each
`terminal/create` really spawns the argv, with the client's own environment plus the
requested variables (what Zed does), and a marker secret in that environment, so a
test sees whether it leaks into a command.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import (
    CreateTerminalResponse,
    EnvVariable,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tests.unit.acp.conftest import RecordingClient

EDITOR_SECRET = "editor-secret-value"


@dataclass
class Terminal:
    argv: list[str]
    proc: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    pump: asyncio.Task[None] | None = None
    released: bool = False

    async def read_all(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(4096):
            self.output += chunk


@dataclass
class EditorClient(RecordingClient):
    buffers: dict[str, str] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    terminals: dict[str, Terminal] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        content = self.buffers.get(path)
        if content is None:
            content = await asyncio.to_thread(Path(path).read_text)
        return ReadTextFileResponse(content=content)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        self.calls.append("create")
        argv = [command, *(args or [])]
        child_env = {**os.environ, "EDITOR_SECRET": EDITOR_SECRET}
        child_env.update({v.name: v.value for v in env or ()})
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=child_env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        terminal = Terminal(argv, proc)
        terminal.pump = asyncio.create_task(terminal.read_all())
        terminal_id = f"term_{len(self.terminals)}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        self.calls.append("wait")
        terminal = self.terminals[terminal_id]
        code = await terminal.proc.wait()
        assert terminal.pump is not None
        await terminal.pump
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        self.calls.append("output")
        terminal = self.terminals[terminal_id]
        code = terminal.proc.returncode
        status = TerminalExitStatus(exit_code=code) if code is not None else None
        return TerminalOutputResponse(
            output=terminal.output.decode(errors="replace"), truncated=False, exit_status=status
        )

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        self.calls.append("release")
        terminal = self.terminals[terminal_id]
        if terminal.proc.returncode is None:
            terminal.proc.kill()
            await terminal.proc.wait()
        terminal.released = True
        return ReleaseTerminalResponse()


@dataclass
class ZedEditor(EditorClient):
    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        await super().write_text_file(session_id, path, content, **kwargs)
        await asyncio.to_thread(_save, Path(path), content)
        return WriteTextFileResponse()


def _save(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:  # truncated and written in place, as Zed saves
        handle.write(content)
