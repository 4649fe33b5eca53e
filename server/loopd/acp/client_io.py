"""The editor's files and terminals, used only when the client advertised them.

`AcpFiles` reads through `fs/read_text_file`, so the agent sees unsaved buffers, but
only for a path it has proven, because the editor resolves the path again on its own
and follows symlinks: a command in the sandbox swapping a directory for a symlink
between loopd's check and the editor's read would hand the model another file. So:

1. the local gate decides the path first (a secret or an unapproved path is refused
   and the editor never hears of it);
2. a `PathWatch` is set on the directories the path passes through, then the file is
   read beneath its root with no symlink allowed (`BeneathFiles`), which proves the
   path and gives the disk's text;
3. the editor is asked; its text is used only if nothing on the path changed from
   before step 2 until its answer arrived. Otherwise the disk's text is used.

Writes always go to the disk through the same beneath-open as without an editor
(atomic, no symlink followed). Handing the editor a write would let a swap redirect
it, and a write cannot be taken back once it landed elsewhere; the editor picks the
change up from the disk, and the tool call's diff shows it.

`AcpTerminals` runs a command in an editor terminal (`terminal/create`, output
streamed by the editor) and releases every terminal it creates, also when the run is
cancelled. `AcpLink.files` / `terminals` hand these to the session layer, which
routes them to the tools of the prompting connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from acp import RequestError
from acp.interfaces import Client
from acp.schema import EnvVariable

from loopd.policy.watch import PathWatch
from loopd.tools.env import FileAccess, GatedFiles, TerminalRun

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AcpFiles:
    """`FileAccess` for one session over the editor's `fs` (see the module
    docstring). Over a `local` that is not a `GatedFiles`, the editor is not used."""

    client: Client
    session_id: str
    local: FileAccess
    can_read: bool = False

    async def read_text(self, path: str) -> str:
        local = self.local
        if not (self.can_read and isinstance(local, GatedFiles)):
            return await local.read_text(path)
        admitted = local.admit(path, write=False)
        if not admitted.inside or admitted.path != path:
            return await local.read_text(path)
        with PathWatch(admitted.root, path) as watch:
            disk = await local.read_text(path)
            if local.admit(path, write=False).path != path:
                return disk
            try:
                response = await self.client.read_text_file(session_id=self.session_id, path=path)
            except RequestError as err:
                log.info("client could not read %s (%s); using the disk", path, err)
                return disk
            if watch.moved():
                log.warning("%s changed while the editor read it; using the disk", path)
                return disk
        return response.content

    async def write_text(self, path: str, text: str) -> None:
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
