"""Layer TOML documents and remember which file set each key.

Tables merge key by key, so a workspace file can change one field of a provider the
user file declares; any other value (string, number, list) is replaced whole, so a
workspace `models = [...]` means exactly that list. The origin map lets validation,
which runs once on the merged document, still name the file a bad value came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KeyPath = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Merged:
    data: Mapping[str, Any]
    origins: Mapping[KeyPath, Path | None]

    def origin(self, key: KeyPath) -> Path | None:
        """The file that last set `key`, or its closest enclosing table."""
        for end in range(len(key), 0, -1):
            if key[:end] in self.origins:
                return self.origins[key[:end]]
        return None


def merge_layers(layers: Sequence[tuple[Path | None, Mapping[str, Any]]]) -> Merged:
    """Merge documents, later layers winning. The inputs are not modified."""
    data: dict[str, Any] = {}
    origins: dict[KeyPath, Path | None] = {}
    for path, document in layers:
        _merge_into(data, document, (), path, origins)
    return Merged(data, origins)


def _merge_into(
    target: dict[str, Any],
    source: Mapping[str, Any],
    prefix: KeyPath,
    path: Path | None,
    origins: dict[KeyPath, Path | None],
) -> None:
    for key, value in source.items():
        key_path = (*prefix, key)
        origins[key_path] = path
        current = target.get(key)
        if isinstance(value, Mapping) and isinstance(current, dict):
            _merge_into(current, value, key_path, path, origins)
        elif isinstance(value, Mapping):
            fresh: dict[str, Any] = {}
            _merge_into(fresh, value, key_path, path, origins)
            target[key] = fresh
        else:
            target[key] = value
