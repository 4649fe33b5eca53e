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

Writes go through `fs/write_text_file` when the client offers it, so the editor's
review (Zed's agent panel: accept or reject per hunk) sees them. The editor writes
in place after resolving the path itself, and a write that landed elsewhere cannot be
taken back, so the race is closed before the write, and checked after it:

1. the local gate decides the path for a write; only a canonical path inside the
   session's folders is handed over (an approved outside path is written by loopd);
2. no command loopd spawned is alive (`commands_alive`, over every session): the
   only processes the model controls are those commands (a sandboxed one's whole
   process tree dies with it, a background one stays in its session's registry, and
   the scheduler never runs a write beside a command), so nothing it controls is
   there to swap the path while the editor resolves it;
3. `Handover.prepare` opens the parent beneath the root with no symlink, creates a
   missing file empty and keeps what the file held; then, inside a `PathWatch` on
   every entry of the path, `holds_still` proves it is that regular file with one
   link, and the editor is asked;
4. after the editor answered, if anything on the path moved or a command started
   meanwhile, what the file held is put back and the write is refused: a swapper
   loopd does not know of (a process outside its sandbox) is caught, and the model
   and the person hear of it, though a write it redirected cannot be taken back (an
   editor that saves by renaming over the file is refused the same way). If nothing
   moved, the editor could only have written the proven file: when it does not hold
   the text sent (the editor kept it in an unsaved buffer), loopd writes it.

A path that cannot be proven (a symlink, a hard link, a FIFO, a folder that leaves
the root, a busy session) is written by loopd beneath the root, as for a client
without `fs.writeTextFile`; the editor picks the change up from the disk, and the
tool call's diff shows it.

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

from loopd.policy.handover import MAX_KEPT_BYTES, Handover, HandoverRefused
from loopd.policy.watch import PathWatch
from loopd.tools.access import Admitted, FileAccess, GatedFiles, PathRefused, TerminalRun
from loopd.tools.processes import commands_alive

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AcpFiles:
    """`FileAccess` for one session over the editor's `fs` (see the module
    docstring). Over a `local` that is not a `GatedFiles`, the editor is not used."""

    client: Client
    session_id: str
    local: FileAccess
    can_read: bool = False
    can_write: bool = False

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
        local = self.local
        if not (self.can_write and isinstance(local, GatedFiles)):
            await local.write_text(path, text)
            return
        admitted = local.admit(path, write=True)
        handover = await self._handover(admitted, path, text)
        if handover is None or not await self._editor_wrote(local, admitted, handover, text):
            await local.write_text(path, text)
        elif not await asyncio.to_thread(handover.landed, text):
            log.info("the editor kept %s in a buffer or changed it; loopd writes it", path)
            await local.write_text(path, text)

    async def _handover(self, admitted: Admitted, path: str, text: str) -> Handover | None:
        """The proven file to hand the editor (steps 1 to 3), or None: loopd writes
        (and applies its size cap to a text over the size a handover keeps)."""
        if not admitted.inside or admitted.path != path or commands_alive():
            return None
        if len(text.encode("utf-8")) > MAX_KEPT_BYTES:
            return None
        try:
            return await asyncio.to_thread(Handover.prepare, admitted.root, path)
        except HandoverRefused as why:
            log.info("loopd writes %s itself: %s", path, why)
            return None

    async def _editor_wrote(
        self, local: GatedFiles, admitted: Admitted, handover: Handover, text: str
    ) -> bool:
        """Hand the proven path to the editor (step 3 of the module docstring). False
        when the editor was not asked or could not write (loopd writes it); a path
        that moved meanwhile is put back and refused."""
        path = admitted.path
        with PathWatch(admitted.root, path) as watch:
            proven = await asyncio.to_thread(handover.holds_still)
            if not proven or local.admit(path, write=True) != admitted or commands_alive():
                return False
            try:
                await self.client.write_text_file(
                    session_id=self.session_id, path=path, content=text
                )
                wrote = True
            except RequestError as err:  # it may have written part: still checked
                log.info("client could not write %s (%s); loopd writes it", path, err)
                wrote = False
            if watch.moved() or commands_alive():
                await self._refuse(handover, "it changed while the editor wrote it")
        return wrote

    async def _refuse(self, handover: Handover, why: str) -> None:
        restored = await asyncio.to_thread(handover.put_back)
        log.warning("the editor's write of %s is refused: %s", handover.path, why)
        back = "what it held is put back" if restored else "it could not be put back"
        raise PathRefused(handover.path, f"{why}; the write is refused and {back}")


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
