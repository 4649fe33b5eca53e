"""JSON that is JSON: no NaN, no Infinity, in or out.

Python's `json` reads `NaN`, `Infinity` and `1e999` (as an infinite float) and
writes them back as bare `NaN`/`Infinity`, which no other JSON parser accepts. One
such number in a model's tool arguments used to reach the history, and every later
request body (encoded strictly) failed: the session was bricked, also after a
reload. So numbers are checked at both edges:

- `loads_strict` is how untrusted JSON that becomes data (a model's tool arguments)
  is parsed: a non-finite number is a `ValueError`, like any other malformed input;
- `dumps_safe` is how anything is written where it must stay readable (the journal,
  a request body, a wire message): strict first, and if a non-finite number or an
  unserialisable value slipped in anyway, `finite` replaces it with a string
  instead of failing the write.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_strict(text: str | bytes) -> Any:
    """`json.loads`, refusing `NaN`, `Infinity`, `-Infinity` and numbers too large
    for a float (`ValueError`)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)


def finite(value: Any) -> Any:
    """`value` with every non-finite float replaced by its name as a string
    (`"NaN"`, `"Infinity"`, `"-Infinity"`), and anything JSON cannot hold by its
    `str`. Containers are copied only when something inside them changes."""
    match value:
        case float() if not math.isfinite(value):
            return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        case str() | int() | float() | bool() | None:
            return value
        case Mapping():
            return {str(k): finite(v) for k, v in value.items()}
        case list() | tuple():
            return [finite(v) for v in value]
        case _:
            return str(value)


def dumps_safe(value: Any, **options: Any) -> str:
    """`json.dumps` that always produces standard JSON: strict, and when `value`
    holds a non-finite number or something unserialisable, the `finite` copy."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except (ValueError, TypeError):
        return json.dumps(finite(value), allow_nan=False, **options)
