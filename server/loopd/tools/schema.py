"""A tiny validator for the JSON Schema subset our tool inputs use.

Why not a library: the schemas are ours and small (objects, strings, numbers,
booleans, arrays, enums), and what matters is the message. The model reads it as a
tool result and must be able to fix its call from it alone, so every message names
the argument by its path (`entries[2].status`), says what was expected and what came
instead, and, for an unknown argument, lists the ones the tool accepts.

Supported keywords: type (object, string, integer, number, boolean, array),
properties, required, additionalProperties (only `false` is meaningful: extra
arguments are always refused), items, enum, minimum, maximum, minLength.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopd.protocol.errors import ToolInputError

_PYTHON_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


def validate(value: Any, schema: Mapping[str, Any], where: str = "") -> None:
    """Raise `ToolInputError` describing the first way `value` breaks `schema`."""
    kind = schema.get("type")
    if kind is not None and not _has_type(value, kind):
        raise ToolInputError(f"{_name(where)} must be {_article(kind)}, got {_describe(value)}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(str(c) for c in schema["enum"])
        raise ToolInputError(f"{_name(where)} must be one of: {choices}; got {value!r}")
    match kind:
        case "object":
            _validate_object(value, schema, where)
        case "array":
            for i, item in enumerate(value):
                validate(item, schema.get("items", {}), f"{where}[{i}]")
        case "integer" | "number":
            _validate_bounds(value, schema, where)
        case "string" if len(value) < schema.get("minLength", 0):
            raise ToolInputError(f"{_name(where)} must not be empty")
        case _:
            pass


def _validate_object(value: Mapping[str, Any], schema: Mapping[str, Any], where: str) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in value:
            raise ToolInputError(f"missing required argument {_name(_join(where, key))}")
    for key, item in value.items():
        if key not in properties:
            accepted = ", ".join(properties) or "none"
            raise ToolInputError(
                f"unexpected argument {_name(_join(where, key))} (accepted: {accepted})"
            )
        validate(item, properties[key], _join(where, key))


def _validate_bounds(value: float, schema: Mapping[str, Any], where: str) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and value < low:
        raise ToolInputError(f"{_name(where)} must be at least {low}, got {value}")
    if high is not None and value > high:
        raise ToolInputError(f"{_name(where)} must be at most {high}, got {value}")


def _has_type(value: Any, kind: str) -> bool:
    # bool is an int in Python but never a number in JSON.
    if isinstance(value, bool):
        return kind == "boolean"
    match kind:
        case "object":
            return isinstance(value, Mapping)
        case "array":
            return isinstance(value, list | tuple)
        case "string":
            return isinstance(value, str)
        case "integer":
            return isinstance(value, int)
        case "number":
            return isinstance(value, int | float)
        case "boolean":
            return False
        case _:
            raise ValueError(f"schema type {kind!r} is not supported")


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _name(where: str) -> str:
    return f"`{where}`" if where else "the input"


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _describe(value: Any) -> str:
    name = _PYTHON_NAMES.get(type(value), type(value).__name__)
    return f"{name} {value!r}" if isinstance(value, str | int | float) else name
