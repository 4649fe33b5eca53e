"""Schedule as a table: each case is a step's calls and the groups they must form."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopd.engine.ports import Declaration, ToolCall
from loopd.engine.schedule import ToolExecution, schedule
from loopd.protocol.events import ToolKind


def _ex(index: int, declaration: Declaration | None, error: str | None = None) -> ToolExecution:
    call = ToolCall(id=f"call-{index}", name="tool", input={"n": index})
    return ToolExecution(index=index, call=call, declaration=declaration, error=error)


def read(path: str) -> Declaration:
    return Declaration(title=f"read {path}", kind="read", reads=(path,))


def search(root: str) -> Declaration:
    return Declaration(title=f"grep {root}", kind="search", reads=(root,))


def write(path: str) -> Declaration:
    return Declaration(title=f"edit {path}", kind="edit", writes=(path,))


def shell(command: str, writes: tuple[str, ...] = ()) -> Declaration:
    return Declaration(title=command, kind="execute", command=command, writes=writes)


def unknown(kind: ToolKind = "other") -> Declaration:
    """An MCP tool that declares nothing it touches."""
    return Declaration(title="mcp: do", kind=kind)


def ask() -> Declaration:
    return Declaration(title="Ask: which?", kind="think", asks_person=True)


def plan() -> Declaration:
    return Declaration(title="Update plan", kind="think")


FAILED = None  # a call whose declaration failed


@dataclass(frozen=True)
class Case:
    calls: list[Declaration | None]
    groups: list[list[int]]
    max_parallel: int = 8
    approval: frozenset[int] = field(default_factory=frozenset)


CASES = {
    "nothing to run": Case([], []),
    "reads run in parallel": Case([read("/a"), read("/b"), read("/a")], [[0, 1, 2]]),
    "reads and searches share a group": Case([read("/a"), search("/"), read("/b")], [[0, 1, 2]]),
    "max_parallel splits a run of reads": Case(
        [read(f"/{n}") for n in range(5)], [[0, 1], [2, 3], [4]], max_parallel=2
    ),
    "max_parallel below one runs calls one by one": Case(
        [read("/a"), read("/b")], [[0], [1]], max_parallel=0
    ),
    "two writes to one path are separated": Case([write("/a"), write("/a")], [[0], [1]]),
    "a read then a write of one path are separated": Case([read("/a"), write("/a")], [[0], [1]]),
    "a write then a read of one path are separated": Case([write("/a"), read("/a")], [[0], [1]]),
    "writes and reads of different paths run together": Case(
        [write("/a"), write("/b"), read("/c")], [[0, 1, 2]]
    ),
    "two shell commands are separated": Case([shell("make"), shell("ls")], [[0], [1]]),
    "a shell command is separated from a write it does not declare": Case(
        [write("/a"), shell("make")], [[0], [1]]
    ),
    "and from a read, since it may write that path too": Case(
        [shell("make"), read("/a")], [[0], [1]]
    ),
    "calls after a command still run together": Case(
        [shell("make"), read("/a"), read("/b")], [[0], [1, 2]]
    ),
    "a shell command that writes a path is separated from its read": Case(
        [shell("make", writes=("/a",)), read("/a")], [[0], [1]]
    ),
    "a call needing approval runs alone": Case(
        [read("/a"), write("/b"), read("/c")], [[0], [1], [2]], approval=frozenset({1})
    ),
    "two calls needing approval run one at a time": Case(
        [write("/a"), write("/b")], [[0], [1]], approval=frozenset({0, 1})
    ),
    "a call whose declaration failed runs alone": Case(
        [read("/a"), FAILED, read("/c")], [[0], [1], [2]]
    ),
    "a write and a search of its folder are separated": Case(
        [write("/w/src/a.py"), search("/w/src")], [[0], [1]]
    ),
    "a search of a folder and a write inside it are separated": Case(
        [search("/w"), write("/w/a.py")], [[0], [1]]
    ),
    "a write to a folder's sibling still runs beside its search": Case(
        [search("/w/src"), write("/w/srcx/a.py")], [[0, 1]]
    ),
    "unknown effects are separated from a read, a write and another": Case(
        [unknown(), read("/a"), unknown(), write("/b")], [[0], [1], [2], [3]]
    ),
    "a read-only unknown is separated from a write, not from a read": Case(
        [unknown("read"), read("/a"), write("/b")], [[0, 1], [2]]
    ),
    "a plan update declares nothing and touches nothing": Case(
        [plan(), write("/a"), unknown("read")], [[0, 1], [2]]
    ),
    "two questions to the person are asked one at a time": Case([ask(), ask()], [[0], [1]]),
    "order is preserved: a read after a write of its path stays after it": Case(
        [read("/a"), write("/a"), read("/a")], [[0], [1], [2]]
    ),
    "order is preserved: a later call joins the group it follows, never an earlier one": Case(
        [read("/a"), write("/a"), read("/b")], [[0], [1, 2]]
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_schedule(case: Case) -> None:
    execs = [
        _ex(i, d, error="bad arguments" if d is None else None) for i, d in enumerate(case.calls)
    ]

    groups = schedule(execs, case.max_parallel, lambda ex: ex.index in case.approval)

    assert [[ex.index for ex in group] for group in groups] == case.groups
    assert all(isinstance(group, tuple) for group in groups)


def test_without_a_predicate_nothing_is_held_back_for_approval() -> None:
    execs = [_ex(0, write("/a")), _ex(1, write("/b"))]

    assert [len(g) for g in schedule(execs, 8)] == [2]


def test_an_error_alone_isolates_the_call_even_with_a_declaration() -> None:
    execs = [_ex(0, read("/a")), _ex(1, read("/b"), error="denied"), _ex(2, read("/c"))]

    assert [[ex.index for ex in g] for g in schedule(execs, 8)] == [[0], [1], [2]]


_PATHS = st.sampled_from(["/a", "/b", "/c"])
_DECLARATIONS = st.one_of(
    _PATHS.map(read),
    _PATHS.map(write),
    st.builds(shell, st.sampled_from(["make", "ls"]), st.tuples(_PATHS) | st.just(())),
    st.none(),
)


def _conflict(a: ToolExecution, b: ToolExecution) -> bool:
    """The separation rules, restated independently of the scheduler's code."""
    x, y = a.declaration, b.declaration
    if x is None or y is None:
        return True
    if x.command is not None or y.command is not None:
        return True  # a command may write any path; these declarations all touch one
    return bool(set(x.writes) & set(y.reads + y.writes) or set(y.writes) & set(x.reads))


@given(st.lists(_DECLARATIONS, max_size=12), st.integers(min_value=1, max_value=4))
def test_groups_keep_order_respect_the_cap_and_hold_no_conflict(
    declarations: list[Declaration | None], max_parallel: int
) -> None:
    execs = [_ex(i, d, error="bad" if d is None else None) for i, d in enumerate(declarations)]

    groups = schedule(execs, max_parallel)

    assert [ex for g in groups for ex in g] == execs
    assert all(1 <= len(g) <= max_parallel for g in groups)
    for g in groups:
        assert not any(_conflict(a, b) for i, a in enumerate(g) for b in g[i + 1 :])
