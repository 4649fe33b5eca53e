"""`LspLink`: one LSP connection as the session layer sees it.

Its `files` are the editor's open documents (see `documents`). Updates go out as
`loopd/session/update` to clients that opted into the extension, and as a readable
transcript (`window/logMessage`) to the others; both also move the turn's progress
bar. Approvals climb a ladder until something can answer:

1. `loopd/session/requestPermission` (ACP params) for clients that opted in;
2. `window/showMessageRequest` with "Allow once", "Always allow", "Reject", "Always
   reject";
3. a message naming the `loopd.approve` command, for clients that have neither
   (or answered method-not-found): the question stays open for that command.

`loopd.approve` can answer any open question, whichever rung shows it. An answer that
never comes is the session layer's timeout, which rejects; a question whose turn is
cancelled is withdrawn from the editor with `$/cancelRequest`.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcMethodNotFound
from pygls.lsp.server import LanguageServer

from loopd.lsp.documents import EditorFiles, SentEdits
from loopd.lsp.narrate import Narrator
from loopd.lsp.review import ReviewFiles, ReviewOptions
from loopd.lsp.wire import (
    decision_from_outcome,
    decision_named,
    option_titles,
    permission_params,
)
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.events import DiffContent
from loopd.protocol.questions import Question
from loopd.tools.access import FileAccess

log = logging.getLogger(__name__)

UPDATE_METHOD = "loopd/session/update"
PERMISSION_METHOD = "loopd/session/requestPermission"
ASK_USER_METHOD = "loopd/session/askUser"  # params: `Question.to_wire()`; result {answer}
DIFF_PREVIEW_LINES = 40


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """What the client opted into, from `capabilities.experimental.loopd` or
    `initializationOptions.loopd`: `true` for everything, or an object with the
    flags `sessionUpdate`, `requestPermission` and `askUser`, and `review` (`true` or
    `{"alwaysAsk": [globs]}`: the agent's writes are reviewed hunk by hunk first)."""

    session_update: bool = False
    request_permission: bool = False
    ask_user: bool = False
    review: ReviewOptions | None = None  # only when asked by name (`loopd.lsp.review`)

    @classmethod
    def negotiate(cls, params: types.InitializeParams) -> ClientOptions:
        asked: dict[str, Any] = {}
        for source in (params.capabilities.experimental, params.initialization_options):
            spec = source.get("loopd") if isinstance(source, Mapping) else None
            if spec is True:
                asked.update(sessionUpdate=True, requestPermission=True, askUser=True)
            elif isinstance(spec, Mapping):
                asked.update(spec)
        return cls(
            bool(asked.get("sessionUpdate")),
            bool(asked.get("requestPermission")),
            bool(asked.get("askUser")),
            ReviewOptions.from_wire(asked.get("review")),
        )


@dataclass(slots=True)
class OpenQuestion:
    id: str
    request: ApprovalRequest
    answer: asyncio.Future[ApprovalDecision]


StepListener = Callable[[str, str], None]  # (session id, progress message)


@dataclass(eq=False, slots=True)
class LspLink:
    server: LanguageServer
    options: ClientOptions
    on_step: StepListener = lambda session_id, step: None
    questions: dict[str, OpenQuestion] = field(default_factory=dict)
    _narrators: dict[str, Narrator] = field(default_factory=dict)
    _sent: SentEdits = field(default_factory=dict)
    _no_custom_request: bool = False
    _no_ask_request: bool = False
    _no_dialogs: bool = False
    _asked: set[Future[Any]] = field(default_factory=set)  # requests the client owes
    _ended: bool = False  # the client's input ended: it answers nothing now

    def files(self, session_id: str, roots: Sequence[str], local: FileAccess) -> FileAccess:
        """The session's files as this editor has them: open documents (unsaved
        edits included; edits land in them through applyEdit), `local` otherwise;
        reviewed by the person first when the client opted into review."""
        files = EditorFiles(self.server, local, self._sent)
        if self.options.review is None:
            return files
        return ReviewFiles(files, local, self, session_id, tuple(roots), self.options.review)

    def notify(self, method: str, params: Any) -> None:
        self.server.protocol.notify(method, params)

    # -- updates ---------------------------------------------------------------------

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        if self.options.session_update:
            self.server.protocol.notify(
                UPDATE_METHOD, {"sessionId": session_id, "update": dict(update)}
            )
        narration = self._narrators.setdefault(session_id, Narrator()).feed(update)
        if not self.options.session_update:
            self._log(narration.lines)
        if narration.step:
            self.on_step(session_id, narration.step)

    def start_of_turn(self, session_id: str, text: str) -> None:
        """The session layer journals the prompt without showing it; the log shows it."""
        if not self.options.session_update:
            self._log([*self._narrators.setdefault(session_id, Narrator()).flush(), f"you: {text}"])

    def end_of_turn(self, session_id: str, summary: str) -> None:
        """The turn ended: log what was still gathering, then the summary line."""
        lines = self._narrators.setdefault(session_id, Narrator()).flush()
        if not self.options.session_update:
            self._log([*lines, summary])

    def _log(self, lines: list[str]) -> None:
        for line in lines:
            self.server.window_log_message(
                types.LogMessageParams(type=types.MessageType.Info, message=line)
            )

    # -- approvals -------------------------------------------------------------------

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        question = OpenQuestion(
            f"appr_{uuid.uuid4().hex[:10]}", request, asyncio.get_running_loop().create_future()
        )
        self.questions[question.id] = question
        dialog = asyncio.ensure_future(self._dialog(question))
        try:
            await asyncio.wait({dialog, question.answer}, return_when=asyncio.FIRST_COMPLETED)
            if question.answer.done():
                return question.answer.result()
            return dialog.result()
        finally:
            dialog.cancel()
            question.answer.cancel()
            del self.questions[question.id]

    def answer(self, question_id: str, decision: ApprovalDecision) -> bool:
        """Answer an open question (the `loopd.approve` command); False if none."""
        question = self.questions.get(question_id)
        if question is None or question.answer.done():
            return False
        question.answer.set_result(decision)
        return True

    async def _dialog(self, question: OpenQuestion) -> ApprovalDecision:
        request = question.request
        if self.options.request_permission and not self._no_custom_request:
            try:
                reply = await self.request(PERMISSION_METHOD, permission_params(request))
                return decision_from_outcome(reply)
            except JsonRpcMethodNotFound:
                self._no_custom_request = True
        if not self._no_dialogs:
            try:
                item = await self.request(types.WINDOW_SHOW_MESSAGE_REQUEST, _dialog(request))
                return decision_named(getattr(item, "title", None))
            except JsonRpcMethodNotFound:
                self._no_dialogs = True
        self._announce(question)
        never: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        return await never  # the answer comes from loopd.approve, or the timeout rejects

    # -- the agent's questions (ask_user) ---------------------------------------------

    def can_ask_user(self) -> bool:
        return (self.options.ask_user and not self._no_ask_request) or not self._no_dialogs

    async def ask_user(self, question: Question) -> str | None:
        """`loopd/session/askUser` for a client that opted in (choices and free
        text), else `window/showMessageRequest` with the choices as its actions."""
        if self.options.ask_user and not self._no_ask_request:
            try:
                reply = await self.request(ASK_USER_METHOD, question.to_wire())
            except JsonRpcMethodNotFound:
                self._no_ask_request = True
            else:
                answer = reply.get("answer") if isinstance(reply, Mapping) else None
                return answer if isinstance(answer, str) else None
        if not question.choices or self._no_dialogs:
            return None
        dialog = types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=f"loopd asks: {question.question}",
            actions=[types.MessageActionItem(title=c) for c in question.choices],
        )
        item = await self.request(types.WINDOW_SHOW_MESSAGE_REQUEST, dialog)
        title = item.get("title") if isinstance(item, Mapping) else getattr(item, "title", None)
        return title if isinstance(title, str) else None

    async def request(self, method: str, params: Any) -> Any:
        """A request to the client that is withdrawn (`$/cancelRequest`) if the
        question stops mattering before the person answers."""
        if self._ended:
            raise ConnectionError("the client closed its input")
        msg_id = f"loopd-{uuid.uuid4().hex[:12]}"
        protocol = self.server.protocol
        pending = protocol.send_request(method, params, msg_id=msg_id)
        self._asked.add(pending)
        try:
            return await asyncio.wrap_future(pending)
        except asyncio.CancelledError:
            protocol._request_futures.pop(msg_id, None)
            protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        finally:
            self._asked.discard(pending)

    def input_ended(self) -> None:
        """The client closed its input, so it answers nothing now: what it was asked
        fails (a question left open would hold the connection's end; a failed
        approval is a rejection), and so does whatever is asked from now on."""
        self._ended = True
        for pending in list(self._asked):
            if not pending.done():
                pending.set_exception(ConnectionError("the client closed its input"))

    def _announce(self, question: OpenQuestion) -> None:
        message = (
            f"loopd asks: {question.request.title}. Answer with the command loopd.approve, "
            f'arguments [{{"approvalId": "{question.id}", "decision": "allow_once"}}] '
            "(or allow_always, reject_once). No answer in time rejects."
        )
        self.server.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )
        self._log([message])


def _dialog(request: ApprovalRequest) -> types.ShowMessageRequestParams:
    lines = [f"loopd asks: {request.title}"]
    if request.reason:
        lines.append(request.reason)
    for block in request.content:
        if isinstance(block, DiffContent):
            lines.extend(_diff_preview(block))
    return types.ShowMessageRequestParams(
        type=types.MessageType.Warning,
        message="\n".join(lines),
        actions=[types.MessageActionItem(title=t) for t in option_titles()],
    )


def _diff_preview(diff: DiffContent) -> list[str]:
    old = (diff.old_text or "").splitlines()
    body = list(
        difflib.unified_diff(old, diff.new_text.splitlines(), diff.path, diff.path, lineterm="")
    )
    if len(body) > DIFF_PREVIEW_LINES:
        body = [*body[:DIFF_PREVIEW_LINES], f"... ({len(body) - DIFF_PREVIEW_LINES} more lines)"]
    return body
