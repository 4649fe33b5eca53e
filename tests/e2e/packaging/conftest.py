"""The wheel, built once per run, and one clean venv per way of installing it
(`installs.installs()`), made once per run and shared by every check on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.lsp.conftest import start
from tests.e2e.packaging.installs import Install, Venv, build_wheel, installs, make_venv

__all__ = ["start"]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session", params=installs(), ids=lambda install: install.name)
def venv(
    request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Venv:
    install: Install = request.param
    return make_venv(install, wheel, tmp_path_factory.mktemp(install.name) / "venv")
