"""The `loopd/session/*` methods: ACP's session methods, params and results under
the `loopd/` prefix, for clients that render the extension (the Neovim plugin, the
VS Code extension). `loopd/session/prompt` is a custom request on purpose: pygls
really cancels a custom request on `$/cancelRequest`, and that cancels the turn.
"""

from __future__ import annotations

from typing import Any

from loopd.lsp.base import LoopdServer, rpc
from loopd.lsp.wire import (
    BadParams,
    config_options_to_wire,
    field,
    mcp_servers_from_wire,
    opened_to_wire,
    page_to_wire,
    prompt_from_wire,
    view_to_wire,
)
from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.mentions import mention_to_wire
from loopd.sessions.commands import CONTINUE
from loopd.sessions.rewind_wire import checkpoints_to_wire, restore_from_wire


@rpc
async def session_new(ls: LoopdServer, params: Any) -> dict[str, Any]:
    dirs = [str(d) for d in field(params, "additionalDirectories", list, [])]
    mcp = mcp_servers_from_wire(field(params, "mcpServers", list, []))
    return view_to_wire(await ls.open_new(field(params, "cwd"), dirs, mcp))


@rpc
async def session_load(ls: LoopdServer, params: Any) -> dict[str, Any]:
    mcp = mcp_servers_from_wire(field(params, "mcpServers", list, []))
    view = await ls.load(field(params, "sessionId"), mcp)
    return opened_to_wire(view)


@rpc
async def session_list(ls: LoopdServer, params: Any) -> dict[str, Any]:
    params = params or {}
    page = ls.manager.list_sessions(
        field(params, "cwd", str, None), field(params, "cursor", str, None)
    )
    return page_to_wire(page)


@rpc
async def session_prompt(ls: LoopdServer, params: Any) -> dict[str, Any]:
    session_id = ls.require_open(field(params, "sessionId"))
    return await _turn(ls, session_id, prompt_from_wire(field(params, "prompt", list)))


@rpc
async def session_continue(ls: LoopdServer, params: Any) -> dict[str, Any]:
    """Continue the session's turn that a crash cut off (`loopd.sessions.resume`):
    the prompt `/continue`, answered as `loopd/session/prompt` is."""
    session_id = ls.require_open(field(params, "sessionId"))
    return await _turn(ls, session_id, Prompt((TextBlock(f"/{CONTINUE.name}"),)))


async def _turn(ls: LoopdServer, session_id: str, prompt: Prompt) -> dict[str, Any]:
    turn = ls.turns.new(session_id, prompt)
    outcome = await ls.turns.run(turn, prompt)
    meta: dict[str, Any] = {"turnId": turn.id}
    if outcome.verification is not None:
        meta["verification"] = outcome.verification.to_wire()
    return {"stopReason": outcome.stop_reason, "_meta": {"loopd": meta}}


@rpc
async def session_close(ls: LoopdServer, params: Any) -> dict[str, Any]:
    await ls.close(field(params, "sessionId"))
    return {}


@rpc
async def session_delete(ls: LoopdServer, params: Any) -> dict[str, Any]:
    """Delete a stored session (ACP has no delete; `loopd sessions delete` does the
    same). An open one is closed first, on every connection that has it."""
    session_id = field(params, "sessionId")
    if session_id in ls.opened:
        await ls.close(session_id)
    await ls.manager.delete_session(session_id)
    return {}


@rpc
async def session_set_config_option(ls: LoopdServer, params: Any) -> dict[str, Any]:
    session_id = ls.require_open(field(params, "sessionId"))
    view = await ls.manager.set_config(
        session_id, field(params, "configId"), field(params, "value")
    )
    return {"configOptions": config_options_to_wire(view)}


@rpc
async def session_steer(ls: LoopdServer, params: Any) -> dict[str, Any]:
    """Say something to the running turn (read at its next step); an error when no
    turn runs, so the client can send it as a prompt instead."""
    session_id = ls.require_open(field(params, "sessionId"))
    await ls.manager.steer(session_id, field(params, "text", str))
    return {}


@rpc
async def session_mentions(ls: LoopdServer, params: Any) -> dict[str, Any]:
    """What the person may @-mention in the session's prompts: its MCP servers'
    resources (`server`, `uri`, `name`, and `title`, `description`, `mimeType` when
    known), as listed now. A prompt mentions one by a `resource_link` with its uri;
    ACP has no such request, the client asks again when its @ menu opens."""
    session_id = ls.require_open(field(params, "sessionId"))
    return {"mentions": [mention_to_wire(m) for m in ls.manager.mentions(session_id)]}


@rpc
async def session_checkpoints(ls: LoopdServer, params: Any) -> dict[str, Any]:
    """The session's checkpoints, one per prompt (`loopd.sessions.rewind_wire`)."""
    session_id = ls.require_open(field(params, "sessionId"))
    return checkpoints_to_wire(ls.manager.checkpoints_of(session_id))


@rpc
async def session_restore(ls: LoopdServer, params: Any) -> dict[str, Any]:
    """Back to before a prompt, or redo: the code, the conversation or both; files
    changed outside the agent since are named and kept unless `force`."""
    session_id = ls.require_open(field(params, "sessionId"))
    return await restore_from_wire(ls.manager, session_id, params)


@rpc
async def session_fork(ls: LoopdServer, params: Any) -> dict[str, Any]:
    """A new session from `sessionId`'s history (ACP's `session/fork`), opened on this
    connection; with `beforePrompt` N its conversation is the one before prompt N (the
    files are shared: restore them with `loopd/session/restore`). Answers as
    `loopd/session/new` does; the fork's history is shown by `loopd/session/load`."""
    source = field(params, "sessionId")
    point = field(params, "beforePrompt", int, None)
    if isinstance(point, bool):
        raise BadParams("`beforePrompt` is a prompt number")
    dirs = [str(d) for d in field(params, "additionalDirectories", list, [])]
    mcp = mcp_servers_from_wire(field(params, "mcpServers", list, []))
    return view_to_wire(await ls.open_fork(source, point, field(params, "cwd"), dirs, mcp))


@rpc
async def session_cancel(ls: LoopdServer, params: Any) -> None:
    await ls.manager.cancel(ls.require_open(field(params, "sessionId")))


def register(server: LoopdServer) -> None:
    for method, handler in (
        ("loopd/session/new", session_new),
        ("loopd/session/load", session_load),
        ("loopd/session/list", session_list),
        ("loopd/session/prompt", session_prompt),
        ("loopd/session/continue", session_continue),
        ("loopd/session/close", session_close),
        ("loopd/session/delete", session_delete),
        ("loopd/session/setConfigOption", session_set_config_option),
        ("loopd/session/steer", session_steer),
        ("loopd/session/mentions", session_mentions),
        ("loopd/session/checkpoints", session_checkpoints),
        ("loopd/session/restore", session_restore),
        ("loopd/session/fork", session_fork),
        ("loopd/session/cancel", session_cancel),
    ):
        server.feature(method)(handler)
