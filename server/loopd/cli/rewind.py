"""`loopd sessions rewind ID [N|redo] [--scope S] [--force]`: a stored session's
checkpoints, or going back to before its prompt N (`loopd.sessions.rewind`).

Without N it lists the checkpoints (read from the store, like `sessions show`).
With N the session is opened here (its lease taken: a session live in an editor is
refused, as for any second writer), restored, and closed; the note of the restore is
journaled, so the editor shows it when it loads the session again. Files changed
outside the agent since the checkpoint are listed on stderr and kept (exit 1)
unless `--force`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from loopd.cli.exits import EXIT_FAILED, EXIT_OK
from loopd.cli.render import escape
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.errors import ConfigError
from loopd.sessions.rewind import REDO, RewindArgs, listing
from loopd.tools.access import FileAccess


class QuietLink:
    """The CLI's link while it restores: nothing to show (the summary is printed), and
    nobody to ask (a restore asks nothing; anything else would be refused)."""

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        return None

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.REJECT_ONCE

    def files(self, session_id: str, roots: Sequence[str], local: FileAccess) -> FileAccess:
        return local


def rewind(args: argparse.Namespace) -> int:
    from loopd.checkpoints.book import CheckpointBook
    from loopd.config import data_dir
    from loopd.sessions.manager import SessionNotFound
    from loopd.store.sqlite import SqliteStore

    store = SqliteStore(data_dir(os.environ) / "sessions.db")
    try:
        record = store.get(args.session_id)
        if record is None:
            raise SessionNotFound(f"no session {args.session_id!r}")
        if args.point is None:
            print(escape(listing(CheckpointBook(store).of(record.id)), multiline=True))
            return EXIT_OK
    finally:
        store.close()
    point = None if args.point == REDO else _number(args.point)
    return asyncio.run(_restore(record.id, record.cwd, RewindArgs(point, args.scope, args.force)))


def _number(word: str) -> int:
    if not word.isdigit():
        raise ConfigError(f"`loopd sessions rewind`: {word!r} is not a prompt number or `redo`")
    return int(word)


async def _restore(session_id: str, cwd: str, wanted: RewindArgs) -> int:
    from loopd.app import build_app
    from loopd.checkpoints.service import Conflict

    app = build_app(dict(os.environ), cwd)
    try:
        await app.manager.load_session(session_id, QuietLink(), replay=False)
        try:
            done = await app.manager.restore(session_id, wanted)
        except Conflict as refused:
            print(f"loopd: {escape(str(refused), multiline=True)}", file=sys.stderr)
            return EXIT_FAILED
        print(escape(done.summary, multiline=True))
        return EXIT_OK if not done.failed else EXIT_FAILED
    finally:
        await app.aclose()
