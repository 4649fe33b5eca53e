"""JSON that is JSON: no NaN, no Infinity, in or out, and never nested without end.

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

Nesting is bounded too: Python's decoder recurses once per `[` or `{`, so a line of
`[[[[…` thousands deep raised `RecursionError` (not a `ValueError`), which killed
`loopd acp` and ended an LSP connection. `loads_bounded` (every message an editor,
an MCP server or a child agent sends) and `loads_strict` refuse anything nested
deeper than `MAX_DEPTH` with a `ValueError` before decoding, so their callers answer
it as the parse error it is.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from itertools import accumulate
from typing import Any

MAX_DEPTH = 256  # far past any real message (MCP tool schemas nest a few dozen)

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _brackets(text: str | bytes) -> bytes:
    """The brackets of the JSON `text`, in order, without those inside strings."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return _STRING.sub(b"", data).translate(None, _NOT_BRACKET)


def _check_depth(text: str | bytes) -> None:
    """`ValueError` when `text` nests deeper than `MAX_DEPTH`. Linear, at C speed;
    nothing more than two counts when it opens too few brackets to nest that deep
    (strings included: every message on a model stream, one per event)."""
    if isinstance(text, str):
        opened = text.count("[") + text.count("{")
    else:
        opened = text.count(b"[") + text.count(b"{")
    if opened <= MAX_DEPTH:
        return
    brackets = _brackets(text)
    if len(brackets) <= MAX_DEPTH:  # the common case: too few to nest too deep
        return
    depth = max(accumulate(map(_STEP.__getitem__, brackets)))
    if depth > MAX_DEPTH:
        raise ValueError(f"nested {depth} deep (at most {MAX_DEPTH})")


def loads_bounded(text: str | bytes) -> Any:
    """`json.loads` of a message from outside the process: `ValueError` for one
    nested deeper than `MAX_DEPTH`, as for any malformed input."""
    _check_depth(text)
    return json.loads(text)


def loads_strict(text: str | bytes) -> Any:
    """`loads_bounded`, also refusing `NaN`, `Infinity`, `-Infinity` and numbers too
    large for a float (`ValueError`)."""
    _check_depth(text)
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)


def loads_finite(text: str | bytes) -> Any:
    """`finite(json.loads(text))`, decoded in one pass at C speed: `NaN`, `Infinity`
    and `-Infinity`, and numbers too large for a float, come out as their names.
    (A journal read back decodes thousands of rows: walking each again was most of
    it.)"""
    return json.loads(text, parse_constant=str, parse_float=_float_or_name)


def _float_or_name(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")


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
