"""The config file's keys and JSON Schema, derived from the dataclasses of `schema.py`.

The dataclasses are the one definition: `toml_keys` gives the parser the keys each
table accepts, and `config_json_schema` gives editors (Even Better TOML, taplo) the
same keys with their types, so the two cannot drift apart. A field's TOML type comes
from its annotation; a field may add `metadata={"choices": (...)}` (closed string
values), `{"distinct": True}` (a non-empty list without repeats) or `{"doc": "..."}`
(the description shown in the editor).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from loopd.config.schema import (
    UNTRUSTED,
    AgentConfig,
    Choices,
    Config,
    Gate,
    ModelSpec,
    ProviderConfig,
    RuntimeConfig,
)

SCHEMA_ID = "https://loopd.dev/schemas/config.json"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

# Fields that are not TOML keys: the table's name is its key in the parent table,
# `choices` is spread into the table itself, `sources` and `origins` record the files,
# `workspace` whether the workspace file is trusted.
_NOT_KEYS = frozenset({"name", "choices", "sources", "origins", "workspace"})
# What a key does in a workspace file whose folder is not trusted (every other key
# is ignored there until the folder is trusted).
_UNTRUSTED_NOTES: Mapping[Gate, str] = {
    Gate.ADDS: "In an untrusted workspace file: added to the user's rules.",
    Gate.LOWERS: "In an untrusted workspace file: applies only when lower than the user's.",
    Gate.CAPS: "In an untrusted workspace file: applies only when it sets or lowers a ceiling.",
    Gate.STRICTER: "In an untrusted workspace file: applies only when stricter.",
}
# The tables keyed by a name the person chooses.
_NAMED_TABLES: Mapping[str, type[Any]] = {
    "providers": ProviderConfig,
    "runtimes": RuntimeConfig,
    "agents": AgentConfig,
}


def _is_key(cls: type[Any], name: str) -> bool:
    """`name` is a key of tables in a list (`[[done.criteria]]`), and the table's own
    key elsewhere (`[providers.NAME]`)."""
    return name not in _NOT_KEYS or (name == "name" and cls not in _NAMED_TABLES.values())


def toml_keys(cls: type[Any]) -> frozenset[str]:
    """The keys a TOML table for dataclass `cls` may hold."""
    keys = {f.name for f in dataclasses.fields(cls) if _is_key(cls, f.name)}
    if any(f.name == "choices" for f in dataclasses.fields(cls)):
        keys |= toml_keys(Choices)
    return frozenset(keys)


def config_json_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the config file."""
    root = _table(Config)
    root |= {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "loopd config (~/.config/loopd/config.toml, .loopd/config.toml)",
    }
    return root


def _table(cls: type[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        if not _is_key(cls, f.name):
            continue
        if cls is Config and f.name in _NAMED_TABLES:
            properties[f.name] = _named_tables(_NAMED_TABLES[f.name])
        else:
            properties[f.name] = _value(hints[f.name], f.metadata)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    if any(f.name == "choices" for f in dataclasses.fields(cls)):
        properties |= _table(Choices)["properties"]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": dict(sorted(properties.items())),
        "additionalProperties": False,
    }
    doc = (cls.__doc__ or "").split("\n\n")[0].strip()
    if doc:
        schema["description"] = " ".join(doc.split())
    return schema | ({"required": required} if required else {})


def _named_tables(cls: type[Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "propertyNames": {"pattern": NAME_PATTERN},
        "additionalProperties": _table(cls),
    }


def _value(hint: Any, metadata: Mapping[str, Any]) -> dict[str, Any]:
    schema = _type(hint)
    if "choices" in metadata:
        schema["enum"] = list(metadata["choices"])
    if metadata.get("distinct"):  # a non-empty list without repeats
        schema |= {"minItems": 1, "uniqueItems": True}
    if "doc" in metadata:
        schema["description"] = metadata["doc"]
    if UNTRUSTED in metadata:
        note = _UNTRUSTED_NOTES[metadata[UNTRUSTED]]
        schema["description"] = f"{schema.get('description', '')} {note}".strip()
    return schema


def _type(hint: Any) -> dict[str, Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [a for a in args if a is not type(None)]
        return _type(inner)
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return {"type": "string", "enum": [member.value for member in hint]}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer", "minimum": 0}
    if hint is float:
        return {"type": "number", "minimum": 0}
    if hint is str:
        return {"type": "string", "minLength": 1}
    if origin is tuple and args[0] is ModelSpec:
        return {"type": "array", "items": {"anyOf": [{"type": "string"}, _table(ModelSpec)]}}
    if origin is tuple:
        return {"type": "array", "items": _type(args[0])}
    if origin in (Mapping, dict):
        return {"type": "object", "additionalProperties": _type(args[1])}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _table(hint)
    raise TypeError(f"no JSON Schema for config type {hint!r}")
