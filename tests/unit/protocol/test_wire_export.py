"""The generated TypeScript and JSON Schema are what the models say (CI fails on
drift), and every `loopd/*` method the server serves has its shapes."""

from __future__ import annotations

import json

from loopd.lsp.base import SESSION_REQUESTS
from loopd.lsp.link import ASK_USER_METHOD, PERMISSION_METHOD, UPDATE_METHOD
from loopd.lsp.review import PROPOSE_METHOD, SETTLED_METHOD
from loopd.protocol.wire.export import SCHEMA_PATH, TS_PATH, drifted, typescript
from loopd.protocol.wire.methods import METHODS


def test_the_generated_files_match_the_models() -> None:
    stale = [str(p) for p in drifted()]
    assert stale == [], "run `.venv/bin/python -m loopd.protocol.wire.export` and commit"


def test_every_served_method_is_described() -> None:
    served = {f"loopd/session/{m}" for m in SESSION_REQUESTS}
    served |= {"loopd/session/cancel", UPDATE_METHOD, PERMISSION_METHOD, ASK_USER_METHOD}
    served |= {PROPOSE_METHOD, SETTLED_METHOD}
    assert {m.name for m in METHODS} == served


def test_the_schema_refers_only_to_shapes_it_defines() -> None:
    doc = json.loads(SCHEMA_PATH.read_text())
    text = SCHEMA_PATH.read_text()
    refs = {part.split('"')[0] for part in text.split('"$ref": "#/$defs/')[1:]}
    assert refs <= set(doc["$defs"])
    assert set(doc["methods"]) == {m.name for m in METHODS}


def test_every_model_and_method_is_exported_to_typescript() -> None:
    text = typescript()
    assert text == TS_PATH.read_text()
    for m in METHODS:
        assert f"  {m.key}: '{m.name}'," in text
    assert "export interface SessionNotification {" in text
    assert "export type ContentBlock = TextContent | " in text
