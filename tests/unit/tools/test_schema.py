import re
from typing import Any

import pytest

from loopd.protocol.errors import ToolInputError
from loopd.tools.schema import validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "offset": {"type": "integer", "minimum": 1},
        "timeout": {"type": "number", "maximum": 10},
        "all": {"type": "boolean"},
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"status": {"type": "string", "enum": ["pending", "completed"]}},
                "required": ["status"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


def test_accepts_valid_input() -> None:
    validate(
        {"path": "a", "offset": 2, "timeout": 1.5, "all": True, "entries": [{"status": "pending"}]},
        SCHEMA,
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({}, "missing required argument `path`"),
        ({"path": "a", "colour": 1}, "unexpected argument `colour` (accepted: path, offset,"),
        ({"path": 3}, "`path` must be a string, got integer 3"),
        ({"path": ""}, "`path` must not be empty"),
        ({"path": "a", "offset": "2"}, "`offset` must be an integer, got string '2'"),
        ({"path": "a", "offset": 2.5}, "`offset` must be an integer, got number 2.5"),
        ({"path": "a", "offset": True}, "`offset` must be an integer, got boolean"),
        ({"path": "a", "offset": 0}, "`offset` must be at least 1, got 0"),
        ({"path": "a", "timeout": 11}, "`timeout` must be at most 10, got 11"),
        ({"path": "a", "all": "yes"}, "`all` must be a boolean, got string 'yes'"),
        ({"path": "a", "entries": {}}, "`entries` must be an array, got object"),
        (
            {"path": "a", "entries": [{"status": "pending"}, {"status": "done"}]},
            "`entries[1].status` must be one of: pending, completed; got 'done'",
        ),
        ({"path": "a", "entries": [{}]}, "missing required argument `entries[0].status`"),
        ([], "the input must be an object, got array"),
    ],
)
def test_rejects_with_a_message_naming_the_argument(value: Any, message: str) -> None:
    with pytest.raises(ToolInputError) as info:
        validate(value, SCHEMA)
    assert message in str(info.value)


# -- schemas from MCP servers: wider JSON Schema than our own tools use ---------------

OPEN: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": [{"type": "string"}]},  # tuple form: unchecked
        "when": {"anyOf": [{"type": "string"}, {"type": "integer"}]},  # unchecked
        "odd": {"type": "date-time-ish"},  # an unknown type name: unchecked
    },
    "additionalProperties": {"type": "integer"},
}


@pytest.mark.parametrize(
    "value",
    [
        {"name": None, "tags": [1], "when": 3, "odd": {}},
        {"name": "x", "extra": 2},
    ],
)
def test_mcp_schemas_accept_what_they_allow(value: dict[str, Any]) -> None:
    validate(value, OPEN)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"name": 3}, "`name` must be a string or a null, got integer 3"),
        ({"extra": "two"}, "`extra` must be an integer, got string 'two'"),
    ],
)
def test_mcp_schemas_refuse_what_they_say(value: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolInputError, match=f"^{re.escape(message)}$"):
        validate(value, OPEN)


def test_an_object_that_lists_no_properties_takes_any_argument() -> None:
    validate({"anything": [1, {"x": None}]}, {"type": "object"})
    validate({"anything": 1}, {"type": "object", "properties": {}, "additionalProperties": True})
    with pytest.raises(ToolInputError, match="unexpected argument `anything`"):
        validate({"anything": 1}, {"type": "object", "properties": {}})
