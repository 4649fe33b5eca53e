"""TOML from files loopd did not write, parsed so that no document can crash it.

`tomllib` recurses once per nested array or inline table, so a workspace's
`.loopd/config.toml` holding `a = [[[[…` a few thousand deep (well inside the 1 MiB
a config may be) raised `RecursionError`, not a `TOMLDecodeError`: an untrusted
file, which must only ever be ignored, stopped `loopd doctor`, `loopd run` and every
session open in the folder. `loads_toml` turns any failure into the `ValueError`
of a file that does not parse, which every caller already answers.
"""

from __future__ import annotations

import tomllib
from typing import Any


def loads_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads`, raising `ValueError` (never `RecursionError`) for a document
    nested too deep to parse, as for any other malformed one."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ValueError("nested too deep to parse") from None
