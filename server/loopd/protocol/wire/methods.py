"""The `loopd/*` methods of the LSP extension: each with its params, its result (a
notification has none) and who sends it. `loopd.lsp.extension` serves the client's
requests; the server's go out through `loopd.lsp.link`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from loopd.protocol.wire import shapes as s
from loopd.protocol.wire.updates import SessionNotification


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    params: Any  # a model or an alias of `shapes` or `updates`
    result: Any | None  # None: a notification
    sender: Literal["client", "server"] = "client"

    @property
    def key(self) -> str:
        """The name the TypeScript `Method` table gives it: the last segment of a
        `loopd/session/*` method, else its segments after `loopd/` in camelCase
        (`loopd/review/propose`: `reviewPropose`)."""
        first, *rest = self.name.removeprefix("loopd/").split("/")
        if first == "session":
            return rest[-1]
        return first + "".join(part[:1].upper() + part[1:] for part in rest)


_S = "loopd/session/"

METHODS: tuple[Method, ...] = (
    Method(_S + "new", s.NewSessionParams, s.NewSessionResult),
    Method(_S + "load", s.LoadSessionParams, s.LoadSessionResult),
    Method(_S + "list", s.ListSessionsParams, s.ListResult),
    Method(_S + "prompt", s.PromptParams, s.PromptResult),
    Method(_S + "continue", s.SessionRef, s.PromptResult),
    Method(_S + "close", s.SessionRef, s.Empty),
    Method(_S + "delete", s.SessionRef, s.Empty),
    Method(_S + "setConfigOption", s.SetConfigOptionParams, s.SetConfigOptionResult),
    Method(_S + "steer", s.SteerParams, s.Empty),
    Method(_S + "mentions", s.SessionRef, s.MentionsResult),
    Method(_S + "checkpoints", s.SessionRef, s.CheckpointsResult),
    Method(_S + "restore", s.RestoreParams, s.RestoreResult),
    Method(_S + "fork", s.ForkSessionParams, s.NewSessionResult),
    Method(_S + "cancel", s.SessionRef, None),
    Method(_S + "update", SessionNotification, None, "server"),
    Method(_S + "requestPermission", s.PermissionParams, s.PermissionOutcome, "server"),
    Method(_S + "askUser", s.AskUserParams, s.AskUserResult, "server"),
    Method("loopd/review/propose", s.ReviewProposal, s.ReviewAnswer, "server"),
    Method("loopd/review/settled", s.ReviewSettled, None, "server"),
)
