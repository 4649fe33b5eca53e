"""Which stream each message of one remote connection goes on (the transport RFD's
rules, as the ACP SDK's own HTTP server applies them; pure, no I/O).

- Responses to `session/new`, `session/load`, `session/resume` and `session/fork`
  go on the connection's stream: the client learns the session id from them, before
  it has that session's stream open. So does what a load replays before its answer.
- Other responses follow the session of their request; messages from the agent
  carry their own `sessionId`; anything with no session goes on the connection's.
"""

from __future__ import annotations

from typing import Any

CONNECTION_ID_HEADER = "Acp-Connection-Id"
SESSION_ID_HEADER = "Acp-Session-Id"
SESSION_ATTACH_METHODS = frozenset({"session/load", "session/resume"})
# Those the RFD posts with `Acp-Session-Id` (`acp.http.protocol`'s list: that module is
# not imported, as it loads the whole SDK, ~1 s, for five names).
SESSION_SCOPED_METHODS = frozenset(
    {"session/set_mode", "session/set_config_option", "session/prompt", "session/cancel",
     "session/close"}
)  # fmt: skip
_ANSWERED_ON_CONNECTION = frozenset({*SESSION_ATTACH_METHODS, "session/new", "session/fork"})


def message_id_key(message_id: Any) -> str | None:
    """A JSON-RPC id as a key (1 and "1" are one request to the SDK's peers too)."""
    return None if message_id is None else str(message_id)


def session_id_from_params(params: Any) -> str | None:
    session = params.get("sessionId") if isinstance(params, dict) else None
    return session if isinstance(session, str) else None


def session_id_from_result(result: Any) -> str | None:
    return session_id_from_params(result)


class Routes:
    """One connection's routing state: the client's requests not yet answered."""

    def __init__(self) -> None:
        self._pending: dict[str, str | None] = {}  # request id -> its session's stream
        self._loading: dict[str, str] = {}  # request id -> the session it loads
        self.sessions: set[str] = set()  # those this connection may open a stream of

    def inbound(self, message: dict[str, Any]) -> None:
        """Note a client request, so that its answer finds its stream."""
        key = message_id_key(message.get("id"))
        method = message.get("method")
        if key is None or not isinstance(method, str):
            return
        session = session_id_from_params(message.get("params"))
        if method in SESSION_ATTACH_METHODS and session is not None:
            self._loading[key] = session
            self.sessions.add(session)
        self._pending[key] = None if method in _ANSWERED_ON_CONNECTION else session

    def outbound(self, message: dict[str, Any]) -> str | None:
        """The session whose stream `message` goes on; None for the connection's."""
        if "method" not in message:
            key = message_id_key(message.get("id"))
            self._loading.pop(key or "", None)
            made = session_id_from_result(message.get("result"))
            if made is not None:
                self.sessions.add(made)
            return self._pending.pop(key or "", None)
        session = session_id_from_params(message.get("params"))
        if session is None or session in self._loading.values():
            return None
        self.sessions.add(session)
        return session
