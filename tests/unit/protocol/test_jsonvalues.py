"""Non-finite numbers: refused where JSON comes in, never written where it goes out."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from loopd.protocol.jsonvalues import (
    MAX_DEPTH,
    dumps_safe,
    finite,
    loads_bounded,
    loads_finite,
    loads_strict,
)
from loopd.protocol.model import INVALID_JSON_KEY
from loopd.providers.body import dumps
from loopd.providers.sse import parse_tool_input


@pytest.mark.parametrize(
    "text", ["NaN", "[Infinity]", '{"a": -Infinity}', '{"a": {"b": [1e999]}}', "-1e400"]
)
def test_loads_strict_refuses_every_non_finite_number(text: str) -> None:
    with pytest.raises(ValueError):
        loads_strict(text)


def test_loads_strict_reads_ordinary_json() -> None:
    assert loads_strict('{"a": [1, 2.5, -3e10, "NaN", null, true]}') == {
        "a": [1, 2.5, -3e10, "NaN", None, True]
    }


@pytest.mark.parametrize("raw", ['{"path": NaN}', '{"n": Infinity}', '{"n": 1e999}'])
def test_tool_arguments_with_non_finite_numbers_are_invalid_json(raw: str) -> None:
    assert parse_tool_input(raw) == {INVALID_JSON_KEY: raw}


def test_finite_names_what_it_replaces_and_keeps_the_rest() -> None:
    value = {"a": [math.nan, math.inf, -math.inf, 1.5], "b": (1, "x"), 2: object}
    repaired = finite(value)
    assert repaired["a"] == ["NaN", "Infinity", "-Infinity", 1.5]
    assert repaired["b"] == [1, "x"]
    assert repaired["2"] == str(object)


def test_dumps_safe_and_request_bodies_always_write_standard_json() -> None:
    value = {"input": {"offset": math.nan}, "tags": {1, 2} and [math.inf]}
    for text in (dumps_safe(value), dumps(value).decode()):
        assert "NaN" in text  # named, as a string
        json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert dumps_safe({"x": 1}, separators=(",", ":")) == '{"x":1}'


@pytest.mark.parametrize("load", [loads_bounded, loads_strict])
@pytest.mark.parametrize(
    "text",
    ["[" * 5000 + "]" * 5000, '{"a":' * 5000 + "1" + "}" * 5000, "[" * (MAX_DEPTH + 1)],
)
def test_json_nested_past_the_bound_is_a_value_error_not_a_recursion_error(
    load: Callable[[str], Any], text: str
) -> None:
    with pytest.raises(ValueError, match="deep"):
        load(text)


def test_brackets_in_strings_do_not_nest_and_the_bound_itself_is_read() -> None:
    at_bound = "[" * MAX_DEPTH + '"[[[\\"{{{"' + "]" * MAX_DEPTH
    assert loads_bounded(at_bound.encode()) is not None
    assert loads_strict(json.dumps({"text": "[" * 10_000})) == {"text": "[" * 10_000}


def test_a_model_s_arguments_nested_thousands_deep_are_invalid_json_for_the_engine() -> None:
    raw = '{"path": ' + "[" * 5000 + "]" * 5000 + "}"
    assert parse_tool_input(raw) == {INVALID_JSON_KEY: raw}


@pytest.mark.parametrize(
    "text",
    [
        '{"a": NaN, "b": [Infinity, -Infinity, 1.5, 2], "c": {"d": 1e999, "e": -1e999}}',
        '[0.1, -0.0, 1e308, "NaN", null, true, {"k": [[]]}]',
        '"plain"',
    ],
)
def test_loads_finite_is_finite_of_loads_in_one_pass(text: str) -> None:
    assert loads_finite(text) == finite(json.loads(text))
    assert json.dumps(loads_finite(text), allow_nan=False) == json.dumps(
        finite(json.loads(text)), allow_nan=False
    )
