"""What the session layer refuses with, and why (re-exported by
`loopd.sessions.manager`, where the frontends take them from)."""

from __future__ import annotations

from loopd.protocol.errors import ConfigError, LoopdError
from loopd.store.lease import Holder


class SessionNotFound(LoopdError):
    pass


class SessionBusy(LoopdError):
    pass


class SessionHeld(SessionBusy):
    """The session is live in another loopd process (it holds the lease)."""

    def __init__(self, session_id: str, holder: Holder) -> None:
        super().__init__(
            f"session {session_id} is open in another loopd process (pid {holder.pid}"
            f" on {holder.host}); close it there or wait"
        )
        self.holder = holder


class NoRuntime(ConfigError):
    """No runtime can run a session: nothing is configured or logged in. Frontends
    tell the person how to log in (ACP answers `auth_required`)."""
