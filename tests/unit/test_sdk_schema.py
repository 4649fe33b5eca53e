"""The ACP SDK's schema built lazily (`loopd.sdk_schema`): the SDK's own classes, the
same bytes on the wire, and an SDK laid out otherwise still imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import ROOT


def python(code: str, *, path: Path | None = None) -> str:
    """`code` run in a fresh interpreter (the hook acts at the first `import acp`)."""
    paths = [str(path)] if path else []
    env = {"PYTHONPATH": ":".join([*paths, str(ROOT / "server")])}
    ran = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_the_sdk_models_are_built_on_first_use_and_say_the_same() -> None:
    said = json.loads(
        python(
            "import json, loopd, acp.schema as s\n"
            "before = s.InitializeRequest.__pydantic_complete__\n"
            "m = s.InitializeRequest.model_validate({'protocolVersion': 1})\n"
            "print(json.dumps([before, m.model_dump_json(by_alias=True, exclude_none=True)]))"
        )
    )
    assert said[0] is False
    assert json.loads(said[1])["protocolVersion"] == 1


def test_an_sdk_without_the_expected_base_still_imports(tmp_path: Path) -> None:
    package = tmp_path / "acp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "schema.py").write_text(
        "from pydantic import BaseModel\n\n"
        "class Hello(BaseModel):\n"
        "    name: str\n"
        '    """Who is greeted."""\n'
    )
    out = python(
        "import loopd, acp.schema as s\nprint(s.Hello.model_validate({'name': 'x'}).name)",
        path=tmp_path,
    )
    assert out.strip() == "x"
