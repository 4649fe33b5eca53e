"""The network grant: whether commands may reach out, changeable while a turn runs.

It is a small mutable object shared by the policy and the sandbox selection, read per
call rather than once, because the person can grant network access in the middle of a
turn (answering "always" to a call that needs it, or a session option) and the next
command must see it.
"""

from __future__ import annotations


class NetworkGrant:
    """Off until granted. Not thread-safe on purpose: one event loop owns a session."""

    __slots__ = ("_granted",)

    def __init__(self, granted: bool = False) -> None:
        self._granted = granted

    @property
    def granted(self) -> bool:
        return self._granted

    def grant(self) -> None:
        self._granted = True

    def revoke(self) -> None:
        self._granted = False

    def __repr__(self) -> str:
        return f"NetworkGrant(granted={self._granted})"
