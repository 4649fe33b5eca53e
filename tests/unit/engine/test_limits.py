"""Limits: the repeat detector's notion of identity and the tool-result size cap."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopd.engine.guard import LoopAction, LoopGuard
from loopd.engine.limits import Limits, call_key, canonical_input, guard_options, truncate_result
from loopd.engine.ports import ToolCall

_counter = iter(range(1_000_000))


def call(name: str, **input: Any) -> ToolCall:
    return ToolCall(id=f"call-{next(_counter)}", name=name, input=input)


def test_defaults_are_the_documented_ones() -> None:
    assert Limits() == Limits(
        max_iterations=25,
        max_tool_calls=100,
        max_parallel=8,
        max_result_bytes=64_000,
        max_identical_calls=3,
        max_turn_tokens=0,
    )


# -- canonical input and call identity ---------------------------------------------------


def test_canonical_input_is_compact_sorted_json() -> None:
    assert canonical_input({"b": 1, "a": {"d": [1, 2], "c": "é"}}) == (
        '{"a":{"c":"é","d":[1,2]},"b":1}'
    )


def test_canonical_input_does_not_depend_on_key_order_at_any_depth() -> None:
    one = {"path": "/a", "opts": {"x": 1, "y": 2}}
    other = {"opts": {"y": 2, "x": 1}, "path": "/a"}

    assert canonical_input(one) == canonical_input(other)


def test_canonical_input_accepts_mappings_that_are_not_dicts() -> None:
    nested = MappingProxyType({"z": 1, "a": 2})

    assert canonical_input(MappingProxyType({"k": nested})) == '{"k":{"a":2,"z":1}}'


def test_canonical_input_rejects_values_json_cannot_hold() -> None:
    with pytest.raises(TypeError, match="not JSON"):
        canonical_input({"k": object()})


def test_call_key_ignores_the_call_id_and_key_order() -> None:
    assert call_key(call("read", path="/a", limit=5)) == call_key(call("read", limit=5, path="/a"))


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (call("read", path="/a"), call("write", path="/a")),
        (call("read", path="/a"), call("read", path="/b")),
        (call("read", path="/a"), call("read", path="/a", limit=1)),
        (call("a", x=1), call("a", x="1")),
    ],
)
def test_call_key_differs_when_tool_or_input_differ(one: ToolCall, other: ToolCall) -> None:
    assert call_key(one) != call_key(other)


# -- the guard a turn gets from its limits -------------------------------------------

A, B = call("bash", command="make"), call("bash", command="make test")
A_AGAIN = ToolCall(id="other", name="bash", input={"command": "make"})


def verdicts(limits: Limits, calls: list[ToolCall]) -> list[str]:
    guard = LoopGuard(guard_options(limits))
    return [guard.observe(LoopAction(c.name, call_key(c))).status for c in calls]


REPEATS = {
    "three identical calls stop by default": (Limits(), [A, A_AGAIN, A], "stop"),
    "a different call in the middle": (Limits(), [A, B, A], "ok"),
    "five is honoured above three": (Limits(max_identical_calls=5), [A] * 4, "ok"),
    "and stops at five": (Limits(max_identical_calls=5), [A] * 5, "stop"),
    "zero turns the check off": (Limits(max_identical_calls=0), [A] * 12, "ok"),
    "one is no repeat, so it acts as two": (Limits(max_identical_calls=1), [A, A], "stop"),
    "two": (Limits(max_identical_calls=2), [B, A, A], "stop"),
}


@pytest.mark.parametrize(("limits", "calls", "last"), REPEATS.values(), ids=REPEATS.keys())
def test_the_configured_repeat_cap_is_the_guards(
    limits: Limits, calls: list[ToolCall], last: str
) -> None:
    assert verdicts(limits, calls)[-1] == last


def test_the_tool_call_budget_warns_once_then_stops() -> None:
    many = [call("read", path=str(i)) for i in range(11)]
    seen = verdicts(Limits(max_tool_calls=10), many)
    assert seen == ["ok"] * 7 + ["warn", "ok", "ok", "stop"]
    assert set(verdicts(Limits(max_tool_calls=0), many * 3)) == {"ok"}


# -- truncate_result ---------------------------------------------------------------------

_NOTICE = re.compile(
    r"\n\[\.\.\. (\d+) of (\d+) bytes cut from the middle of this result \.\.\.\]\n"
)


def _split(result: str) -> tuple[str, int, int, str]:
    match = _NOTICE.search(result)
    assert match is not None, result
    return result[: match.start()], int(match[1]), int(match[2]), result[match.end() :]


def _assert_exact_cut(text: str, result: str, max_bytes: int) -> None:
    head, cut, total, tail = _split(result)
    assert len(result.encode()) <= max_bytes
    assert total == len(text.encode())
    assert text.startswith(head)
    assert text.endswith(tail)
    assert len(head.encode()) + cut + len(tail.encode()) == total


@pytest.mark.parametrize("size", [0, 1, 99, 100])
def test_text_that_fits_is_returned_unchanged(size: int) -> None:
    text = "x" * size

    assert truncate_result(text, 100) is text


def test_ascii_is_cut_in_the_middle_and_the_cut_is_counted_exactly() -> None:
    text = "".join(f"line {n}\n" for n in range(2_000))

    result = truncate_result(text, 1_000)

    head, _cut, _total, tail = _split(result)
    assert head.startswith("line 0\n")
    assert tail.endswith("line 1999\n")
    _assert_exact_cut(text, result, 1_000)
    assert len(result.encode()) >= 1_000 - 4  # the budget is used, bar the count's digits


@pytest.mark.parametrize("max_bytes", range(80, 120))
@pytest.mark.parametrize("char", ["é", "€", "𝄞"], ids=["2-byte", "3-byte", "4-byte"])
def test_multibyte_text_is_cut_on_character_boundaries(char: str, max_bytes: int) -> None:
    text = "ab" + char * 60 + "yz"

    result = truncate_result(text, max_bytes)

    _assert_exact_cut(text, result, max_bytes)
    head, _, _, tail = _split(result)
    assert set(head[2:]) <= {char}
    assert set(tail[:-2]) <= {char}


def test_a_cap_too_small_for_the_notice_keeps_only_the_notice() -> None:
    text = "x" * 500

    result = truncate_result(text, 10)

    assert _split(result) == ("", 500, 500, "")


@given(st.text(min_size=1, max_size=400), st.integers(min_value=70, max_value=500))
def test_truncation_fits_and_accounts_for_every_byte(text: str, max_bytes: int) -> None:
    result = truncate_result(text, max_bytes)

    if len(text.encode()) <= max_bytes:
        assert result == text
    else:
        _assert_exact_cut(text, result, max_bytes)


def test_a_result_cap_of_zero_is_off() -> None:
    assert truncate_result("x" * 100_000, 0) == "x" * 100_000
