"""Workspace trust in the editor: the question at a session's first turn, and the
`trust` entry point the LSP `loopd.trust` command (VS Code's own Workspace Trust)
calls.

When the app's workspace config was not applied whole (`loopd.config.trust.store`), a
session's first turn begins with a tool call titled "Trust the settings in ...?"
listing the ignored keys and the file itself, put to the person through the
session's approver: ACP `session/request_permission`, the LSP dialog
(`window/showMessageRequest`) or `loopd/session/requestPermission`. The question is
asked once per version of the file in a process; later sessions, and clients asked
already, are told in the first reply which settings were ignored. No answer, a
rejection or a file that changed since it was read leave the file inert.

A yes records trust for exactly the bytes that were read and shown (the question
shows `WorkspaceStatus.content`, whose hash `Config.workspace` carries; a file that
changed since is not trusted), then `reconfigure` rebuilds the catalog: sessions
opened afterwards get the file's settings; the open ones keep the runtime they
started with. A file that cannot be used, or too long to show whole, is not asked
about: the person is told it was ignored.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from loopd.config import (
    ConfigFileError,
    TrustState,
    TrustStore,
    WorkspaceFile,
    WorkspaceStatus,
    workspace_config_file,
)
from loopd.engine.ports import Approver, Emitter
from loopd.protocol.approvals import ApprovalRequest
from loopd.protocol.errors import ConfigError
from loopd.protocol.events import AgentMessageChunk, TextBlock, ToolCallStarted, ToolCallUpdated

SHOWN_BYTES = 8_000  # of the file, in the question
TRUSTED = (
    "Trusted. Sessions opened from now on use these settings; this one keeps the runtime "
    "it started with."
)
log = logging.getLogger(__name__)


@dataclass(slots=True)
class WorkspaceTrust:
    """`status` is the app's current workspace status; `reconfigure` re-reads the
    config and rebuilds the runtimes after trust was given. Editors only: `loopd run`
    says what was ignored on stderr and never asks (`--yes` must never trust a
    folder)."""

    status: Callable[[], WorkspaceStatus | None]
    store: TrustStore
    reconfigure: Callable[[], Awaitable[None]]
    _asked: set[str] = field(default_factory=set)

    async def first_turn(self, session_id: str, emitter: Emitter, approver: Approver) -> None:
        """Before a session's first turn: ask, or say what was ignored."""
        status = self.status()
        if status is None or not status.notice:
            return
        if await self._trusted_meanwhile(status):
            return
        if status.fingerprint in self._asked or not _askable(status):
            await emitter.emit(AgentMessageChunk(_told(status), _id("msg")))
            return
        self._asked.add(status.fingerprint)
        call_id = _id("trust")
        title = f"Trust the settings in {status.file}?"
        shown = (TextBlock(_question(status)),)
        await emitter.emit(ToolCallStarted(call_id, title, "other", content=shown))
        request = ApprovalRequest(
            session_id=session_id,
            tool_call_id=call_id,
            tool_name="trust",
            title=title,
            kind="other",
            raw_input={"folder": status.folder, "file": str(status.file)},
            reason=f"it sets {', '.join(status.ignored)}, which only apply in a trusted folder",
            content=shown,
        )
        decision = await approver.approve(request)
        try:
            trusted = decision.allowed and await self.trust(status.folder, status.fingerprint)
        except ConfigError as err:  # recorded, but the settings are not usable as they are
            text = f"Trusted, but its settings cannot be used, so nothing changed: {err}"
        else:
            text = TRUSTED if trusted else status.notice
        await emitter.emit(ToolCallUpdated(call_id, "completed", content=(TextBlock(text),)))

    async def _trusted_meanwhile(self, status: WorkspaceStatus) -> bool:
        """Trusted since the config was read (`loopd trust` in a terminal, another
        connection): apply it instead of asking."""
        try:
            found = WorkspaceFile.read(Path(status.folder), status.file)
        except ConfigFileError:
            return False
        if found is None or self.store.state(found) is not TrustState.TRUSTED:
            return False
        try:
            await self.reconfigure()
        except ConfigError as err:
            log.warning("the trusted %s cannot be used: %s", status.file, err)
        return True

    async def trust(self, folder: str, expect: str | None = None) -> bool:
        """Trust `folder`'s workspace file as it is now (and only if it and what it
        runs still have the fingerprint `expect`, when given), then reconfigure.
        False when there is nothing to trust or the file changed. Raises
        `ConfigError` when the trusted settings cannot be used (the runtimes stay as
        they were)."""
        path = Path(folder)
        try:
            found = WorkspaceFile.read(path, workspace_config_file(path))
        except ConfigFileError:  # now a FIFO, a link out...: not what was shown
            return False
        if found is None or (expect is not None and found.fingerprint != expect):
            return False
        self.store.trust(found)
        await self.reconfigure()
        return True

    async def untrust(self, folder: str) -> bool:
        withdrawn = self.store.untrust(Path(folder))
        if withdrawn:
            await self.reconfigure()
        return withdrawn


def _askable(status: WorkspaceStatus) -> bool:
    """A file is asked about only when it can be used and shown whole: trust goes to
    exactly the bytes shown, never to a tail the question cut off."""
    return not status.problem and len(status.content) <= SHOWN_BYTES


def _told(status: WorkspaceStatus) -> str:
    if _askable(status) or status.problem:
        return status.notice
    return (
        f"{status.notice} It is over {SHOWN_BYTES} bytes, too long to show here, so it is "
        "not asked about."
    )


def _question(status: WorkspaceStatus) -> str:
    """The notice and the file as read once: the very bytes whose sha256 a yes
    records (the file is never read again for the question)."""
    text = status.content.decode("utf-8", "replace")
    pinned = "".join(f"\n  {path}: {digest[:12]}" for path, digest in status.runs)
    pins = f"\n\nThe files of the folder its runtimes name are pinned:{pinned}" if pinned else ""
    return (
        f"{status.notice}\n\nTrusting the folder lets every setting in the file apply, "
        f"including commands it names (they run on this machine, outside the sandbox). "
        f"It is asked again if the file or a pinned file changes.{pins}\n\n"
        f"{status.file}:\n{text}"
    )


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"
