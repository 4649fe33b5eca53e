"""`AcpLink`: one ACP connection as the session layer sees it (a `ClientLink`).

Updates go out as `session/update` notifications (the session layer's wire JSON,
validated into the SDK's model so a malformed update fails here, loudly, not in the
editor); approvals go out as `session/request_permission` with the four option kinds.
The link also owns what this connection's client advertised, so file and terminal
access through the editor is only ever offered when the client said it can.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acp.interfaces import Client
from acp.schema import ClientCapabilities

from loopd.acp.client_io import AcpFiles, AcpTerminals
from loopd.acp.questions import ask_by_permission, elicit
from loopd.acp.translate import (
    PERMISSION_OPTIONS,
    decision_of,
    permission_tool_call,
    update_model,
)
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.protocol.questions import Question
from loopd.tools.access import FileAccess


@dataclass(eq=False, slots=True)
class AcpLink:
    """`answers=False` is a client that can answer no request of ours (a file of
    requests on stdin): every question is then refused unasked, and its files and
    terminals are never used, so nothing waits for an answer that cannot come."""

    client: Client
    capabilities: ClientCapabilities | None = None
    answers: bool = True

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        await self.client.session_update(session_id, update_model(session_id, update))

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        if not self.answers:
            return ApprovalDecision.REJECT_ONCE
        response = await self.client.request_permission(
            session_id=request.session_id,
            tool_call=permission_tool_call(request),
            options=list(PERMISSION_OPTIONS),
        )
        return decision_of(response)

    def can_ask_user(self) -> bool:
        return True  # every client shows permission requests

    async def ask_user(self, question: Question) -> str | None:
        """Elicitation when the client advertised forms, else a permission request
        whose options are the choices (see `loopd.acp.questions`)."""
        elicitation = self.capabilities.elicitation if self.capabilities else None
        if elicitation is not None and elicitation.form is not None:
            return await elicit(self.client, question)
        return await ask_by_permission(self.client, question)

    def files(self, session_id: str, roots: Sequence[str], local: FileAccess) -> AcpFiles:
        """File access for a session's tools: reads of proven paths inside the
        session's folders from the editor's buffers when the client advertised
        `fs.readTextFile`, writes of proven paths through the editor when it
        advertised `fs.writeTextFile` (and can answer: a file of requests cannot),
        everything else through `local` (see `AcpFiles`)."""
        fs = self.capabilities.fs if self.capabilities and self.answers else None
        return AcpFiles(
            self.client,
            session_id,
            local,
            can_read=bool(fs and fs.read_text_file),
            can_write=bool(fs and fs.write_text_file),
        )

    def terminals(self, session_id: str) -> AcpTerminals | None:
        """Commands in the editor's terminals, or None when the client has none."""
        if not (self.capabilities and self.capabilities.terminal and self.answers):
            return None
        return AcpTerminals(self.client, session_id)
