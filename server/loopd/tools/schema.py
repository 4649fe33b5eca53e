"""A tiny validator for the JSON Schema subset our tool inputs use.

Why not a library: the schemas are ours and small (objects, strings, numbers,
booleans, arrays, enums), and what matters is the message. The model reads it as a
tool result and must be able to fix its call from it alone, so every message names
the argument by its path (`entries[2].status`), says what was expected and what came
instead, and, for an unknown argument, lists the ones the tool accepts.

Supported keywords: type (object, string, integer, number, boolean, array, null, or
a list of them), properties, required, additionalProperties, items, enum, minimum,
maximum, minLength. Other keywords are not checked (the server behind an MCP tool
checks its own schema; ours only catches what it can name).

One deliberate difference from JSON Schema: an object that lists `properties`
refuses arguments it does not list unless `additionalProperties` is `true` or a
schema. Our own tools rely on it; an MCP tool's schema that lists no properties
accepts any argument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from loopd.protocol.errors import ToolInputError


def arguments(required: Sequence[str], **properties: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's input schema: an object of `properties`, of which those named in
    `required` must be given, and which refuses any other argument (spelled out with
    `additionalProperties`, so a provider's own check reads it the same way)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def text(description: str | None = None, *, empty: bool = False) -> dict[str, Any]:
    """A string argument, never empty unless `empty`."""
    schema: dict[str, Any] = {"type": "string"} if empty else {"type": "string", "minLength": 1}
    return schema if description is None else {**schema, "description": description}


def flag(description: str) -> dict[str, Any]:
    """A boolean argument."""
    return {"type": "boolean", "description": description}


_PYTHON_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


_KNOWN_TYPES = frozenset(_PYTHON_NAMES.values())


def validate(value: Any, schema: Mapping[str, Any], where: str = "") -> None:
    """Raise `ToolInputError` describing the first way `value` breaks `schema`."""
    kinds = _types(schema.get("type"))
    if kinds and not any(_has_type(value, k) for k in kinds):
        expected = " or ".join(_article(k) for k in kinds)
        raise ToolInputError(f"{_name(where)} must be {expected}, got {_describe(value)}")
    kind = next((k for k in kinds if _has_type(value, k)), None)
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(str(c) for c in schema["enum"])
        raise ToolInputError(f"{_name(where)} must be one of: {choices}; got {value!r}")
    match kind:
        case "object":
            _validate_object(value, schema, where)
        case "array" if isinstance(schema.get("items"), Mapping):
            for i, item in enumerate(value):
                validate(item, schema["items"], f"{where}[{i}]")
        case "integer" | "number":
            _validate_bounds(value, schema, where)
        case "string" if len(value) < schema.get("minLength", 0):
            raise ToolInputError(f"{_name(where)} must not be empty")
        case _:
            pass


def _validate_object(value: Mapping[str, Any], schema: Mapping[str, Any], where: str) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", "properties" not in schema)
    for key in schema.get("required", ()):
        if key not in value:
            raise ToolInputError(f"missing required argument {_name(_join(where, key))}")
    for key, item in value.items():
        if key in properties:
            validate(item, properties[key], _join(where, key))
        elif isinstance(extra, Mapping):
            validate(item, extra, _join(where, key))
        elif extra is not True:
            accepted = ", ".join(properties) or "none"
            raise ToolInputError(
                f"unexpected argument {_name(_join(where, key))} (accepted: {accepted})"
            )


def _validate_bounds(value: float, schema: Mapping[str, Any], where: str) -> None:
    if not math.isfinite(value):  # the parse edge refuses them; never trust one edge
        raise ToolInputError(f"{_name(where)} must be a finite number, got {value}")
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
        case "null":
            return value is None
        case _:
            return False  # `_types` passes only the names above


def _types(kind: Any) -> tuple[str, ...]:
    """The schema's `type` as a tuple (empty: any); names we do not know are left
    unchecked rather than refusing every value."""
    kinds = (kind,) if isinstance(kind, str) else tuple(kind) if isinstance(kind, list) else ()
    return tuple(k for k in kinds if k in _KNOWN_TYPES)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _name(where: str) -> str:
    return f"`{where}`" if where else "the input"


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _describe(value: Any) -> str:
    name = _PYTHON_NAMES.get(type(value), type(value).__name__)
    return f"{name} {value!r}" if isinstance(value, str | int | float) else name
