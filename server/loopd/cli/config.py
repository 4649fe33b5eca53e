"""`loopd config path|show|schema`: the config files, their merged result, its schema.

`schema` prints the JSON Schema derived from the same dataclasses the parser reads
(`loopd.config.jsonschema`), for editors: Even Better TOML (VS Code) and taplo
complete and check a file that starts with `#:schema ./loopd.schema.json`.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from loopd.cli.render import escape


def config(args: argparse.Namespace) -> int:
    from loopd.config import load_config, user_config_file, workspace_config_file
    from loopd.config.jsonschema import config_json_schema

    env, cwd = dict(os.environ), Path.cwd()
    match args.action:
        case "path":
            for label, path in (
                ("user", user_config_file(env)),
                ("workspace", workspace_config_file(cwd)),
            ):
                state = "found" if path.is_file() else "not found"
                print(f"{label:<10} {escape(str(path))}  ({state})")
        case "show":
            print(json.dumps(_shown(load_config(env, cwd)), indent=2))
        case "schema":
            print(json.dumps(config_json_schema(), indent=2))
    return 0


def _shown(parsed: object) -> object:
    """The validated config as JSON: what loopd will use after merging the files."""
    import dataclasses
    from collections.abc import Mapping
    from enum import Enum

    def plain(value: object) -> object:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, Mapping):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        if isinstance(value, Enum):
            return value.value
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, bytes):  # the workspace file's own bytes: not repeated
            return f"({len(value)} bytes)"
        return value

    return plain(parsed)
