"""The trust gate: what an untrusted workspace file may still change.

Untrusted, a workspace file may only tighten the boundary the person's own config
draws: add `deny` and `ask` rules, lower a limit or the approval timeout, pick a
stricter default mode. Everything else in it (providers and their URLs, runtimes and
their commands, allow rules, defaults that pick a runtime or model, keys added
later) is ignored and named, so the person can be told. Which keys tighten, and how,
is declared once, on the key's field in `loopd.config.schema`
(`metadata={UNTRUSTED: Gate.LOWERS}`, gathered in `UNTRUSTED_KEYS`); a key without
it needs trust.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from loopd.config.schema import UNTRUSTED, Config, Gate
from loopd.policy.modes import DEFAULT_MODE, Mode, parse_mode

_MODE_ORDER = tuple(Mode)  # most restrictive first


def untrusted_keys() -> Mapping[tuple[str, str], Gate]:
    """`(table, key)` to `Gate`, for every key declared as one that only tightens."""
    root = Config()
    found: dict[tuple[str, str], Gate] = {}
    for table in dataclasses.fields(Config):
        value = getattr(root, table.name)
        if dataclasses.is_dataclass(value):
            for key in dataclasses.fields(value):
                if UNTRUSTED in key.metadata:
                    found[(table.name, key.name)] = key.metadata[UNTRUSTED]
    return MappingProxyType(found)


UNTRUSTED_KEYS = untrusted_keys()


def gate_untrusted(
    document: Mapping[str, Any], user: Config
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The part of an untrusted workspace `document` that may apply over `user` (the
    config from the user file alone), and the dotted keys left out, in file order.
    A value of the wrong type is kept as is, so validation names it."""
    kept: dict[str, dict[str, Any]] = {}
    ignored: list[str] = []
    for table, body in document.items():
        if not isinstance(body, Mapping):
            ignored.append(table)
            continue
        for key, value in body.items():
            gate = UNTRUSTED_KEYS.get((table, key))
            applied = None if gate is None else _apply(gate, value, _current(user, table, key))
            if applied is None:
                ignored.append(f"{table}.{key}")
            else:
                kept.setdefault(table, {})[key] = applied
    return kept, tuple(ignored)


def _current(user: Config, table: str, key: str) -> Any:
    return getattr(getattr(user, table), key)


def _apply(gate: Gate, value: Any, current: Any) -> Any:
    """The value to merge, or None when it would widen what `current` allows."""
    match gate:
        case Gate.ADDS:
            if not isinstance(value, list):
                return value
            return [*current, *(rule for rule in value if rule not in current)]
        case Gate.LOWERS:
            if not _is_number(value):
                return value
            return value if value <= current else None
        case Gate.CAPS:
            if not _is_number(value):
                return value
            return value if current == 0 or 0 < value <= current else None
        case Gate.STRICTER:
            return _stricter_mode(value, current)


def _is_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _stricter_mode(value: Any, current: str | None) -> Any:
    """`value` when it is no more permissive than `current`; a value that is not a
    mode is kept, so validation names it."""
    try:
        wanted = parse_mode(value) if isinstance(value, str) else None
        baseline = parse_mode(current) if current else DEFAULT_MODE
    except ValueError:
        return value
    if wanted is None:
        return value
    return value if _MODE_ORDER.index(wanted) <= _MODE_ORDER.index(baseline) else None
