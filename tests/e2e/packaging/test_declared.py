"""`make lint`'s dependency check (deptry, configured in pyproject.toml) on a copy of
the package: the package as it is passes, and a module importing something it does
not declare fails it, whether the module comes from nowhere, only from another
package's dependencies (h11, from httpcore), or only from the dev group."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT

pytestmark = pytest.mark.e2e


def deptry(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deptry", "--no-ansi", "."], cwd=tree, capture_output=True, text=True
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        ROOT / "server", tmp_path / "server", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


def test_the_package_declares_what_it_imports(tree: Path) -> None:
    done = deptry(tree)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("module", "rule"),
    [("yaml", "DEP001"), ("h11", "DEP003"), ("pytest", "DEP004")],
)
def test_an_undeclared_import_fails_the_check(tree: Path, module: str, rule: str) -> None:
    (tree / "server" / "loopd" / "planted.py").write_text(f"import {module}\n")
    done = deptry(tree)
    assert done.returncode == 1
    assert f"{rule} '{module}'" in done.stdout + done.stderr
