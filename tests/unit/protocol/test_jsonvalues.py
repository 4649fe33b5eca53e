"""Non-finite numbers: refused where JSON comes in, never written where it goes out."""

from __future__ import annotations

import json
import math

import pytest

from loopd.protocol.jsonvalues import dumps_safe, finite, loads_strict
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
