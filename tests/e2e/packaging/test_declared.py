"""`make lint`'s dependency check (deptry, configured in pyproject.toml) on a copy of
the package: the package as it is passes, and a module importing something it does
not declare fails it, whether the module comes from nowhere, only from another
package's dependencies (h11, from httpcore), or only from the dev group. deptry
reads import statements: a module imported by name is refused by ruff instead
(TID251), so it cannot slip past both."""

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


def test_a_module_imported_by_name_fails_the_lint(tree: Path) -> None:
    """sniffio was once loaded by `importlib.import_module` from a tuple of names,
    which deptry does not see (it reads a literal argument, not a loop's): the
    installed package could not answer. `make lint`'s ruff refuses the call."""
    planted = tree / "server" / "loopd" / "planted.py"
    planted.write_text(
        'import importlib\n\nfor name in ("sniffio",):\n    importlib.import_module(name)\n'
    )
    assert deptry(tree).returncode == 0  # what deptry alone lets through
    ruff = ["ruff", "check", "--no-cache", "--output-format", "concise", "server"]
    done = subprocess.run([sys.executable, "-m", *ruff], cwd=tree, capture_output=True, text=True)
    assert done.returncode == 1
    [said] = [line for line in done.stdout.splitlines() if "planted.py" in line]
    assert said.startswith("server/loopd/planted.py:4:5: TID251"), done.stdout
