"""Boundary crossings put to the person, and the closed set of answers.

The answer set mirrors ACP's permission option kinds plus `cancelled` (the turn was
cancelled while the question was open). Anything that is not an explicit allow is a
deny: that is what "fail closed" means in code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from loopd.protocol.events import Location, ToolContent, ToolKind


class ApprovalDecision(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"
    CANCELLED = "cancelled"

    @property
    def allowed(self) -> bool:
        return self in (ApprovalDecision.ALLOW_ONCE, ApprovalDecision.ALLOW_ALWAYS)

    @property
    def remembered(self) -> bool:
        return self in (ApprovalDecision.ALLOW_ALWAYS, ApprovalDecision.REJECT_ALWAYS)


ANSWERS: tuple[tuple[ApprovalDecision, str], ...] = (
    (ApprovalDecision.ALLOW_ONCE, "Allow once"),
    (ApprovalDecision.ALLOW_ALWAYS, "Always allow"),
    (ApprovalDecision.REJECT_ONCE, "Reject"),
    (ApprovalDecision.REJECT_ALWAYS, "Always reject"),
)
"""The answers every dialog offers (ACP's four permission options), in the order it
shows them, with their titles: the ACP permission request, the LSP dialog and the
`loopd/` extension's request all offer the same four."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One tool call that needs a person's answer. `title` names the exact command or
    path; `content` previews what will happen (a diff for edits)."""

    session_id: str
    tool_call_id: str
    tool_name: str
    title: str
    kind: ToolKind
    raw_input: Mapping[str, Any]
    reason: str = ""
    content: tuple[ToolContent, ...] = ()
    locations: tuple[Location, ...] = ()
