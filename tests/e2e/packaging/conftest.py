"""The wheel, built once per run, and one clean venv per way of installing it
(`installs.installs()`), made once per run and shared by every check on it
(`venv`: every install; `serving_venv` and `plain_venv`: those with and without the
`serve` extra)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.lsp.conftest import start
from tests.e2e.packaging.installs import Install, Venv, build_wheel, installs, make_venv

__all__ = ["start"]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def venvs(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[Install], Venv]:
    """The venv of an install, made on first use and shared by every fixture after."""
    made: dict[Install, Venv] = {}

    def venv_of(install: Install) -> Venv:
        if install not in made:
            where = tmp_path_factory.mktemp(install.name) / "venv"
            made[install] = make_venv(install, wheel, where)
        return made[install]

    return venv_of


def _name(install: Install) -> str:
    return install.name


@pytest.fixture(scope="session", params=installs(), ids=_name)
def venv(request: pytest.FixtureRequest, venvs: Callable[[Install], Venv]) -> Venv:
    return venvs(request.param)


@pytest.fixture(scope="session", params=[i for i in installs() if i.serves], ids=_name)
def serving_venv(request: pytest.FixtureRequest, venvs: Callable[[Install], Venv]) -> Venv:
    """A venv with the `serve` extra (`loopd serve`'s dependencies) installed."""
    return venvs(request.param)


@pytest.fixture(scope="session", params=[i for i in installs() if not i.serves], ids=_name)
def plain_venv(request: pytest.FixtureRequest, venvs: Callable[[Install], Venv]) -> Venv:
    """A venv of the package alone, as `uv tool install loopd-agent` makes it."""
    return venvs(request.param)
