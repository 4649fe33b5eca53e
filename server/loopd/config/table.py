"""Reading one TOML table of a merged config: typed accessors that fail with the file
and the dotted key named (`ConfigFileError`), so `loopd.config.parse` says only
what each table holds."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from loopd.config.merge import KeyPath, Merged
from loopd.protocol.errors import ConfigError

E = TypeVar("E", bound=StrEnum)


class ConfigFileError(ConfigError):
    """A config file holds a value loopd cannot use. `path` is the file the offending
    key came from (after merging, the file that set it last), `key` its dotted TOML
    path, `problem` what is wrong, in words meant for the person editing the file."""

    def __init__(self, path: Path | None, key: str, problem: str) -> None:
        where = f"{path}: " if path is not None else ""
        super().__init__(f"{where}{key}: {problem}")
        self.path = path
        self.key = key
        self.problem = problem


# Names of providers and runtimes: what a person types after `--runtime`.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class Table:
    """One TOML table being read, with enough context to blame the right file."""

    def __init__(self, merged: Merged, data: Mapping[str, Any], key: KeyPath) -> None:
        self._merged = merged
        self._data = data
        self.key = key

    def fail(self, key: str | None, problem: str) -> NoReturn:
        path = self.key if key is None else (*self.key, key)
        raise ConfigFileError(self._merged.origin(path), ".".join(path), problem)

    def only(self, allowed: frozenset[str]) -> None:
        for key in sorted(self._data):
            if key not in allowed:
                self.fail(key, f"unknown key (expected one of: {', '.join(sorted(allowed))})")

    def has(self, key: str) -> bool:
        return key in self._data

    def text(self, key: str) -> str | None:
        return self.required_text(key) if key in self._data else None

    def required_text(self, key: str) -> str:
        value = self._data.get(key)
        if value is None:
            self.fail(key, "is required")
        if not isinstance(value, str) or not value.strip():
            self.fail(key, "must be a non-empty string")
        return value

    def name(self, key: str) -> str | None:
        value = self.text(key)
        if value is not None and not NAME_RE.match(value):
            self.fail(key, "must be a name of letters, digits, '.', '_' or '-'")
        return value

    def enum(self, key: str, kind: type[E]) -> E:
        value = self.required_text(key)
        try:
            return kind(value)
        except ValueError:
            choices = ", ".join(member.value for member in kind)
            self.fail(key, f"unknown value {value!r} (expected one of: {choices})")

    def texts(self, key: str) -> tuple[str, ...] | None:
        value = self._data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(key, "must be a list of non-empty strings")
        return tuple(value)

    def number(self, key: str, default: int) -> int:
        value = self._data.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            self.fail(key, "must be a whole number, zero or more")
        return value

    def amount(self, key: str, default: float) -> float:
        value = self._data.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
            self.fail(key, "must be a number, zero or more")
        return float(value)

    def integer(self, key: str, default: int) -> int:
        value = self._data.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 255:
            self.fail(key, "must be an exit code, 0 to 255")
        return value

    def flag(self, key: str) -> bool | None:
        value = self._data.get(key)
        if value is not None and not isinstance(value, bool):
            self.fail(key, "must be true or false")
        return value

    def table(self, key: str) -> Table:
        value = self._data.get(key, {})
        if not isinstance(value, Mapping):
            self.fail(key, "must be a table")
        return Table(self._merged, value, (*self.key, key))

    def tables(self) -> Iterator[tuple[str, Table]]:
        """Each sub-table, in name order; every value must be a table with a valid name."""
        for name in sorted(self._data):
            if not NAME_RE.match(name):
                self.fail(name, "must be a name of letters, digits, '.', '_' or '-'")
            yield name, self.table(name)

    def child(self, label: str, data: Mapping[str, Any]) -> Table:
        """A table nested in a list (a model spec), read with this table's origin."""
        return Table(self._merged, data, (*self.key, label))

    def items(self) -> list[tuple[str, Any]]:
        return sorted(self._data.items())

    def array(self, key: str) -> list[Any] | None:
        value = self._data.get(key)
        if value is not None and not isinstance(value, list):
            self.fail(key, "must be a list")
        return value
