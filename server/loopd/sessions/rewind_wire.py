"""The editor-facing JSON of checkpoints, one source for ACP (`_loopd/session/
checkpoints|restore`) and the LSP extension (`loopd/session/checkpoints|restore`).

`checkpoints {sessionId}` answers `{checkpoints: [{prompt, label, createdAt,
conversation, leftOut}], redo}`: one per prompt (restore to before it), and whether a
restore can be redone. `restore {sessionId, prompt | redo: true, scope?: "both" |
"code" | "conversation", force?}` answers `{restored: true, summary, written,
removed, failed: [{path, reason}]}`, or, when files changed outside the agent since
and `force` is not set, `{restored: false, changedOutside: [paths], summary}`:
nothing was changed, and the client may ask the person and send `force: true`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopd.checkpoints.book import Checkpoint
from loopd.checkpoints.service import SCOPES, Conflict, Restored
from loopd.protocol.errors import ConfigError
from loopd.sessions.manager import SessionManager
from loopd.sessions.rewind import RewindArgs


def checkpoints_to_wire(points: list[Checkpoint]) -> dict[str, Any]:
    prompts = [
        {
            "prompt": p.prompt,
            "label": p.label,
            "createdAt": p.created_at,
            "conversation": p.conversation is not None,
            "leftOut": list(p.left_out),
        }
        for p in points
        if p.kind == "prompt"
    ]
    return {"checkpoints": prompts, "redo": any(p.kind == "redo" for p in points)}


def rewind_args_from_wire(params: Mapping[str, Any]) -> RewindArgs:
    """Raises `ConfigError` (invalid params) for anything but the documented shape."""
    point, redo = params.get("prompt"), params.get("redo", False)
    scope, force = params.get("scope", "both"), params.get("force", False)
    if redo is not True and (not isinstance(point, int) or isinstance(point, bool)):
        raise ConfigError("restore needs `prompt` (a prompt number) or `redo: true`")
    if scope not in SCOPES or not isinstance(force, bool):
        raise ConfigError(f"`scope` is one of {', '.join(SCOPES)}; `force` is true or false")
    return RewindArgs(None if redo is True else point, scope, force)


async def restore_from_wire(
    manager: SessionManager, session_id: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    args = rewind_args_from_wire(params)
    try:
        done = await manager.restore(session_id, args)
    except Conflict as refused:
        return {
            "restored": False,
            "changedOutside": list(refused.paths),
            "summary": str(refused),
        }
    return restored_to_wire(done)


def restored_to_wire(done: Restored) -> dict[str, Any]:
    return {
        "restored": True,
        "summary": done.summary,
        "written": list(done.written),
        "removed": list(done.removed),
        "failed": [{"path": p, "reason": why} for p, why in done.failed],
    }
