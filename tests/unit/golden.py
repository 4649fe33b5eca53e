"""Golden JSON for the wire builders, as the ACP SDK's golden tests have it: a
builder's output is compared with a committed file and checked against the model of
`loopd.protocol.wire.shapes` it claims to be (unknown keys refused, none lost).

`LOOPD_GOLDEN=write` rewrites the files from the builders, to review in the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter


def assert_golden(test_file: str, name: str, cases: dict[str, tuple[Any, Any]]) -> None:
    """Each case is `(built JSON, the shape it must be)`; the file holds the JSON."""
    built = {case: value for case, (value, _) in cases.items()}
    path = Path(test_file).parent / "golden" / f"{name}.json"
    if os.environ.get("LOOPD_GOLDEN") == "write":
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(built, indent=2) + "\n")
    assert built == json.loads(path.read_text())
    for case, (value, shape) in cases.items():
        adapter: TypeAdapter[Any] = TypeAdapter(shape)
        parsed = adapter.validate_python(value)
        again = adapter.dump_python(parsed, by_alias=True, exclude_unset=True, mode="json")
        assert again == value, case
