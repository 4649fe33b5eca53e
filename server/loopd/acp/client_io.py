"""The editor's files and terminals, used only when the client advertised them.

`AcpFiles` reads through `fs/read_text_file` (so the agent sees unsaved buffers) and
writes through `fs/write_text_file` (so the editor's review shows the edit), for
paths inside the session roots; anything else, or a client that did not advertise
`fs`, goes to the local disk. `AcpTerminals` runs a command in an editor terminal
(`terminal/create`, output streamed by the editor) and releases every terminal it
creates, also when the run is cancelled.

`TextFiles` is structurally `loopd.tools.env.FileAccess` and `AcpTerminals` is a
`loopd.tools.env.EditorTerminals`: `AcpLink.files` / `terminals` hand them to the
session layer, which routes them to the tools of the prompting connection.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from acp import RequestError
from acp.interfaces import Client
from acp.schema import EnvVariable

from loopd.tools.env import TerminalRun

log = logging.getLogger(__name__)


class TextFiles(Protocol):
    async def read_text(self, path: str) -> str: ...

    async def write_text(self, path: str, text: str) -> None: ...


@dataclass(frozen=True, slots=True)
class AcpFiles:
    client: Client
    session_id: str
    roots: tuple[str, ...]
    local: TextFiles
    can_read: bool = False
    can_write: bool = False

    def inside_roots(self, path: str) -> bool:
        real = os.path.realpath(path)
        return any(
            os.path.commonpath([real, os.path.realpath(root)]) == os.path.realpath(root)
            for root in self.roots
        )

    async def read_text(self, path: str) -> str:
        """The editor's view of the file when it can give one; a client that cannot
        (it errors) falls back to the disk, which also raises the right error for a
        missing file."""
        if self.can_read and self.inside_roots(path):
            try:
                response = await self.client.read_text_file(session_id=self.session_id, path=path)
            except RequestError as err:
                log.info("client could not read %s (%s); reading the disk", path, err)
            else:
                return response.content
        return await self.local.read_text(path)

    async def write_text(self, path: str, text: str) -> None:
        """A client that refuses a write is not bypassed: the refusal is the tool's
        error, so the person's review stays the last word."""
        if self.can_write and self.inside_roots(path):
            try:
                await self.client.write_text_file(
                    session_id=self.session_id, path=path, content=text
                )
            except RequestError as err:
                raise OSError(f"the editor refused to write {path}: {err}") from err
            return
        await self.local.write_text(path, text)


@dataclass(frozen=True, slots=True)
class AcpTerminals:
    client: Client
    session_id: str

    async def run(
        self,
        argv: Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        on_start: Callable[[str], Awaitable[None]],
        output_byte_limit: int | None = None,
    ) -> TerminalRun:
        """Run `argv` in an editor terminal to its end. `on_start` gets the terminal
        id as soon as it exists (to show `terminal` tool content while it runs). A
        timeout is the caller's `asyncio.timeout`: cancellation releases the terminal,
        which kills the command."""
        created = await self.client.create_terminal(
            session_id=self.session_id,
            command=argv[0],
            args=list(argv[1:]),
            env=[EnvVariable(name=k, value=v) for k, v in env.items()],
            cwd=cwd,
            output_byte_limit=output_byte_limit,
        )
        terminal_id = created.terminal_id
        try:
            await on_start(terminal_id)
            ended = await self.client.wait_for_terminal_exit(
                session_id=self.session_id, terminal_id=terminal_id
            )
            out = await self.client.terminal_output(
                session_id=self.session_id, terminal_id=terminal_id
            )
            return TerminalRun(out.output, out.truncated, ended.exit_code, ended.signal)
        finally:
            await asyncio.shield(self._release(terminal_id))

    async def _release(self, terminal_id: str) -> None:
        try:
            await self.client.release_terminal(session_id=self.session_id, terminal_id=terminal_id)
        except Exception:
            log.warning("could not release terminal %s", terminal_id, exc_info=True)
