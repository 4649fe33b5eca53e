"""Per-call grants: what the policy let ONE call do beyond the session's defaults.

The policy is the first gate: it decides a call from its declaration, and may ask the
person. The tools are the second: the file access refuses paths outside the roots
and protected writes, and the bash tool runs with the network off and inside the
sandbox. Between the two, something has to carry "the person approved exactly this"
from the decision to the run, without trusting the tool's own arguments (which the
model wrote). That is a `Grant`:

- `RulePolicy` records one per call it allows (on `decide` when it allows outright, on
  `remember` when the person answered yes), naming only what that declaration asked
  for: its paths the session may not use freely, its network, its unsandboxed run.
- `ToolRegistry.run` takes the call's grant out (`CallGrants.running`), so while the
  call runs `current_grant()` is that grant, in that call's task only: calls running
  in parallel never see each other's.
- A call with no recorded grant runs with `NO_GRANT`: nothing beyond the defaults.

So an approval reaches no further than the call it was given for: the same path or
command asked again is decided again, and a symlink swapped in after the decision
resolves to a path the grant does not name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Grant:
    """`paths` are canonical paths the call may touch although they are outside the
    roots or protected; `network` lets a command reach the network; `unsandboxed`
    lets it run outside the OS sandbox."""

    paths: frozenset[str] = frozenset()
    network: bool = False
    unsandboxed: bool = False


NO_GRANT = Grant()
_current: ContextVar[Grant] = ContextVar("loopd_call_grant", default=NO_GRANT)


def current_grant() -> Grant:
    """The grant of the call running in this task (`NO_GRANT` outside any call)."""
    return _current.get()


class CallGrants:
    """Grants recorded by call id at decision time, handed over once at run time."""

    __slots__ = ("_by_call",)

    def __init__(self) -> None:
        self._by_call: dict[str, Grant] = {}

    def record(self, call_id: str, grant: Grant) -> None:
        if grant != NO_GRANT:
            self._by_call[call_id] = grant

    @contextmanager
    def running(self, call_id: str) -> Iterator[Grant]:
        """Make the call's grant current for the `with` body, then forget it: a grant
        is used by one run."""
        grant = self._by_call.pop(call_id, NO_GRANT)
        token = _current.set(grant)
        try:
            yield grant
        finally:
            _current.reset(token)
