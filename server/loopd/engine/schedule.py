"""Scheduling one step's tool calls into groups that are safe to run together.

Pure, and deliberately so: scheduling is the easiest part of the turn cycle to get
subtly wrong and the cheapest to test in isolation. Groups run one after another;
the calls inside a group run concurrently. The loop appends results in the model's
order whatever finishes first, so the grouping changes wall-clock time, never the
history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loopd.engine.ports import Declaration, ToolCall


@dataclass(frozen=True, slots=True)
class ToolExecution:
    """One call, from the model's emission to its result.

    `index` is the position the model emitted it at. `declaration` is what the call
    said it will touch; it is None when declaring failed, and `error` then says why.
    A call whose declaration failed runs alone, so its error reaches the model in the
    right position without pretending to know what it would have touched.
    """

    index: int
    call: ToolCall
    declaration: Declaration | None
    error: str | None = None


Group = tuple[ToolExecution, ...]


def schedule(
    execs: Sequence[ToolExecution],
    max_parallel: int,
    needs_approval: Callable[[ToolExecution], bool] | None = None,
) -> list[Group]:
    """Split calls into groups, in order, that are safe to run concurrently.

    Two calls are separated when running them together would make the outcome depend
    on a race:

    - a write and a read or write of the same path, or of a path inside it, or of a
      folder it lies in (a `grep`, `glob` or `explore` of the folder a write is in);
    - a shell command and anything that reads or writes a path, or another command:
      a command can write anything, so it is a write of every path;
    - a call with unknown effects (an MCP tool that declares nothing) and anything
      that touches anything: it may write every path, or, when its kind says it only
      reads or searches, read every path;
    - anything that needs approval, or asks the person a question, since a person's
      decisions are sequential;
    - anything whose declaration failed, since nothing is known about what it touches.

    Parallelism is kept for reads and searches, which is where it is both safe and
    where the wall-clock gain actually is; a group holds at most `max_parallel` calls
    (a cap below one is treated as one, so scheduling always makes progress).

    Calls are taken in the model's order and a new group starts whenever the next
    call conflicts with the current one or the current one is full. So no call ever
    runs before an earlier call it conflicts with: the grouping only ever cuts the
    sequence, it never reorders it.

    `needs_approval`, when supplied, reports the calls that must run alone because the
    person will be asked about them. It is a predicate rather than a field because only
    the engine can evaluate a policy verdict, and a scheduler that demanded one would
    put policy inside a function whose whole job is ordering. None means the caller
    has nothing to say.
    """
    cap = max(1, max_parallel)
    groups: list[Group] = []
    current: list[ToolExecution] = []
    declared: list[Declaration] = []
    sealed = False  # the current group holds a call that runs alone
    for ex in execs:
        mine = _shareable(ex, needs_approval)
        if current and (
            mine is None or sealed or len(current) >= cap or _conflicts(mine, declared)
        ):
            groups.append(tuple(current))
            current, declared = [], []
        current.append(ex)
        sealed = mine is None
        if mine is not None:
            declared.append(mine)
    if current:
        groups.append(tuple(current))
    return groups


def _shareable(
    ex: ToolExecution, needs_approval: Callable[[ToolExecution], bool] | None
) -> Declaration | None:
    """The declaration the call shares a group by, or None when it runs alone."""
    if ex.error is not None or ex.declaration is None or ex.declaration.asks_person:
        return None
    if needs_approval is not None and needs_approval(ex):
        return None
    return ex.declaration


_READ_KINDS = frozenset({"read", "search", "fetch"})


def _conflicts(mine: Declaration, group: Sequence[Declaration]) -> bool:
    """Whether a call declaring `mine` may not run alongside calls declaring `group`."""
    return any(_races(mine, theirs) or _races(theirs, mine) for theirs in group)


def _races(a: Declaration, b: Declaration) -> bool:
    """Whether what `a` writes, or reads of everything, races with what `b` does."""
    if _writes_all(a):
        return _touches_anything(b)
    if _reads_all(a) and _writes_some(b):
        return True
    return _touches(a.writes, b)


def _writes_all(declaration: Declaration) -> bool:
    """A command, or unknown effects that may write: a write of every path."""
    unknown = declaration.unknown_effects and declaration.kind not in _READ_KINDS
    return declaration.command is not None or unknown


def _reads_all(declaration: Declaration) -> bool:
    """Unknown effects of a kind that only reads: a read of every path."""
    return declaration.unknown_effects and declaration.kind in _READ_KINDS


def _writes_some(declaration: Declaration) -> bool:
    return bool(declaration.writes) or _writes_all(declaration)


def _touches(writes: Sequence[str], declaration: Declaration) -> bool:
    """Whether any of `writes` is, holds or lies in a path `declaration` touches."""
    touched = (*declaration.reads, *declaration.writes)
    return any(_overlap(w, t) for w in writes for t in touched)


def _overlap(a: str, b: str) -> bool:
    """Whether canonical paths `a` and `b` are one, or one contains the other."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def _touches_anything(declaration: Declaration) -> bool:
    """Whether a call that may write any path races with `declaration`."""
    declared = declaration.reads or declaration.writes or declaration.command is not None
    return bool(declared) or declaration.unknown_effects
