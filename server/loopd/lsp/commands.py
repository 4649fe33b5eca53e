"""What every LSP client gets: `workspace/executeCommand` commands and code actions.

Each command answers at once (with the session and turn it acted on) and leaves the
turn running in the background: pygls does not cancel a command's coroutine on
`$/cancelRequest`, so a long turn behind a command could not be stopped that way;
`loopd.cancel` and the progress bar's cancel button stop it instead. Arguments are
one object (or, for the setters, a bare string); a missing object means defaults.

Code actions on a selection or a diagnostic are `loopd.ask` with that context, so
they work in any client that runs a code action's command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lsprotocol import types

from loopd.lsp.base import LoopdServer, rpc
from loopd.lsp.wire import BadParams, config_options_to_wire, decision_named, field
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.events import EmbeddedResourceBlock, Prompt, TextBlock
from loopd.sessions.trust import WorkspaceTrust

EXPLAIN = "Explain what this code does."
REFACTOR = "Refactor this code to make it clearer, without changing what it does."
ASK_DEFAULT = "Help me with this code."


def _arg(args: tuple[Any, ...], key: str = "value") -> Mapping[str, Any]:
    if not args or args[0] is None:
        return {}
    if isinstance(args[0], str):
        return {key: args[0]}
    if isinstance(args[0], Mapping):
        return args[0]
    raise BadParams("the argument must be an object")


@rpc
async def ask(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    params = _arg(args, "prompt")
    prompt = _prompt_with_context(ls, params)
    session_id = await ls.session_for(field(params, "sessionId", str, None))
    turn = ls.turns.new(session_id, prompt)
    ls.turns.start(turn, prompt)
    return {"sessionId": session_id, "turnId": turn.id}


def _prompt_with_context(ls: LoopdServer, params: Mapping[str, Any]) -> Prompt:
    text = field(params, "prompt", str, ASK_DEFAULT)
    uri = field(params, "uri", str, None)
    if uri is None:
        return Prompt((TextBlock(text),))
    doc = ls.workspace.get_text_document(uri)
    span = params.get("range")
    if isinstance(span, Mapping):
        selection = ls.protocol._converter.structure(span, types.Range)
        start, end = selection.start.line + 1, selection.end.line + 1
        body = doc.text_in_client_range(selection) or doc.lines[selection.start.line]
        ref = f"{uri}#L{start}-{end}" if end != start else f"{uri}#L{start}"
    else:
        body, ref = doc.source, uri
    return Prompt((TextBlock(text), EmbeddedResourceBlock(ref, body)))


@rpc
async def cancel(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    params = _arg(args, "turnId")
    turn_id = field(params, "turnId", str, None)
    session_id = field(params, "sessionId", str, None)
    chosen = [
        t
        for t in ls.turns.running.values()
        if (turn_id is None or t.id == turn_id)
        and (session_id is None or t.session_id == session_id)
    ]
    for turn in chosen:
        await ls.turns.cancel(turn)
    if session_id is not None and not chosen:
        await ls.manager.cancel(ls.require_open(session_id))
    return {"cancelled": [t.id for t in chosen]}


@rpc
async def steer(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    """`loopd.steer` "text" or {text, sessionId}: to the running turn of the session."""
    params = _arg(args, "text")
    session_id = await ls.session_for(field(params, "sessionId", str, None))
    await ls.manager.steer(session_id, field(params, "text", str))
    return {"sessionId": session_id}


@rpc
async def new_session(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    view = await ls.open_new(field(_arg(args, "cwd"), "cwd", str, ls.root()))
    return {"sessionId": view.id, "configOptions": config_options_to_wire(view)}


@rpc
async def approve(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    params = _arg(args, "decision")
    question_id = field(params, "approvalId", str, None)
    if question_id is None:
        if len(ls.link.questions) != 1:
            raise BadParams(f"{len(ls.link.questions)} questions are open; name one by approvalId")
        question_id = next(iter(ls.link.questions))
    decision = decision_named(field(params, "decision", str, ApprovalDecision.ALLOW_ONCE.value))
    if not ls.link.answer(question_id, decision):
        raise BadParams(f"no open question {question_id!r}")
    return {"approvalId": question_id, "decision": decision.value}


async def _set(ls: LoopdServer, option: str, args: tuple[Any, ...]) -> dict[str, Any]:
    params = _arg(args)
    session_id = await ls.session_for(field(params, "sessionId", str, None))
    view = await ls.manager.set_config(session_id, option, field(params, "value"))
    return {"sessionId": session_id, "configOptions": config_options_to_wire(view)}


@rpc
async def set_mode(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    return await _set(ls, "mode", args)


@rpc
async def set_model(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    return await _set(ls, "model", args)


@rpc
async def undo(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    """Put back the last turn's file edits (open documents through applyEdit)."""
    session_id = await ls.session_for(field(_arg(args), "sessionId", str, None))
    report = await ls.manager.undo(session_id)
    return {
        "sessionId": session_id,
        "restored": list(report.restored),
        "refused": [{"path": path, "reason": why} for path, why in report.refused],
        "summary": report.summary,
    }


@rpc
async def trust(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    """Trust a folder's `.loopd/config.toml` as it is now (VS Code calls this when the
    person trusts the workspace); sessions opened afterwards use its settings."""
    gate, folder = _trust_target(ls, args)
    return {"folder": folder, "trusted": await gate.trust(folder)}


@rpc
async def untrust(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    gate, folder = _trust_target(ls, args)
    return {"folder": folder, "withdrawn": await gate.untrust(folder)}


def _trust_target(ls: LoopdServer, args: tuple[Any, ...]) -> tuple[WorkspaceTrust, str]:
    gate = ls.manager.workspace
    if gate is None:
        raise BadParams("this server does not manage workspace trust")
    status = gate.status()
    default = status.folder if status is not None else ls.root()
    return gate, os.path.realpath(field(_arg(args, "folder"), "folder", str, default))


async def status(ls: LoopdServer, *args: Any) -> dict[str, Any]:
    return {
        "sessionId": ls.current,
        "sessions": list(ls.opened),
        "turns": ls.turns.status(),
        "verification": ls.turns.last_seal(ls.current),
        "questions": [
            {"approvalId": q.id, "sessionId": q.request.session_id, "title": q.request.title}
            for q in ls.link.questions.values()
        ],
    }


LOGIN_COMMAND = ("loopd", "login")


@rpc
async def login(ls: LoopdServer, args: tuple[Any, ...]) -> dict[str, Any]:
    """Whether a runtime is usable now (after `loopd login` ran in a terminal); if
    not, the person is told what to run. Editors that can open a terminal run
    `command` there and call this again."""
    usable = await ls.manager.refresh_runtimes()
    if not usable:
        ls.window_show_message(
            types.ShowMessageParams(
                types.MessageType.Warning,
                "loopd has no model provider: run `loopd login` in a terminal, "
                "or set a provider key in the environment the editor starts loopd with",
            )
        )
    return {"loggedIn": usable, "command": list(LOGIN_COMMAND)}


def code_actions(ls: LoopdServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri, span = params.text_document.uri, params.range
    where = {"uri": uri, "range": ls.protocol._converter.unstructure(span)}
    actions = [
        _action("Ask loopd", types.CodeActionKind.Empty, {**where, "ask": True}),
        _action("Explain (loopd)", types.CodeActionKind.Empty, {**where, "prompt": EXPLAIN}),
        _action(
            "Refactor (loopd)", types.CodeActionKind.RefactorRewrite, {**where, "prompt": REFACTOR}
        ),
    ]
    for diag in params.context.diagnostics:
        prompt = f"Fix this diagnostic: {diag.message}"
        if diag.source:
            prompt += f" ({diag.source})"
        target = {"uri": uri, "range": ls.protocol._converter.unstructure(diag.range)}
        fix = _action(
            "Fix this diagnostic (loopd)",
            types.CodeActionKind.QuickFix,
            {**target, "prompt": prompt},
        )
        fix.diagnostics = [diag]
        actions.insert(0, fix)
    return actions


def _action(title: str, kind: types.CodeActionKind, argument: dict[str, Any]) -> types.CodeAction:
    command = types.Command(title=title, command="loopd.ask", arguments=[argument])
    return types.CodeAction(title=title, kind=kind, command=command)


def register(server: LoopdServer) -> None:
    for name, handler in (
        ("loopd.ask", ask),
        ("loopd.cancel", cancel),
        ("loopd.steer", steer),
        ("loopd.newSession", new_session),
        ("loopd.approve", approve),
        ("loopd.setMode", set_mode),
        ("loopd.setModel", set_model),
        ("loopd.undo", undo),
        ("loopd.login", login),
        ("loopd.trust", trust),
        ("loopd.untrust", untrust),
    ):
        server.command(name)(_spread(handler))
    server.command("loopd.status")(status)
    kinds = [types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite]
    server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=kinds)
    )(code_actions)


def _spread(handler: Any) -> Any:
    """pygls spreads command arguments; ours take them as one tuple."""

    async def command(ls: LoopdServer, *args: Any) -> Any:
        return await handler(ls, args)

    command.__name__ = handler.__name__
    return command
