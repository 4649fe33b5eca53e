"""The stored login: private on disk, below the environment, below the config files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from tests.unit.fifos import released

from loopd.config import load_config
from loopd.config.login import (
    Login,
    LoginFileError,
    forget_login,
    login_path,
    read_login,
    with_login,
    write_login,
)


def test_a_login_round_trips_in_a_file_only_its_owner_reads(tmp_path: Path) -> None:
    data = tmp_path / "data"
    login = Login({"OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "http://x/v1"}, {"model": "m"})
    path = write_login(data, login)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert read_login(data) == login
    assert forget_login(data) is True
    assert read_login(data) == Login()
    assert forget_login(data) is False


def test_a_file_others_can_read_is_refused(tmp_path: Path) -> None:
    write_login(tmp_path, Login({"ANTHROPIC_API_KEY": "k"}))
    os.chmod(login_path(tmp_path), 0o644)
    with pytest.raises(LoginFileError, match="chmod 600"):
        read_login(tmp_path)


def test_a_symlink_planted_in_its_place_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"env": {"ANTHROPIC_API_KEY": "planted"}}')
    os.chmod(elsewhere, 0o600)
    login_path(tmp_path).symlink_to(elsewhere)
    with pytest.raises(LoginFileError):
        read_login(tmp_path)


def test_a_fifo_planted_in_its_place_does_not_block_the_start(tmp_path: Path) -> None:
    os.mkfifo(login_path(tmp_path), 0o600)
    with released(login_path(tmp_path)) as blocked, pytest.raises(LoginFileError):
        read_login(tmp_path)
    assert blocked == []


@pytest.mark.parametrize("content", ["not json", '{"env": {"PATH": "/evil"}}', "[1]"])
def test_a_malformed_or_foreign_file_names_itself(tmp_path: Path, content: str) -> None:
    path = login_path(tmp_path)
    path.write_text(content)
    os.chmod(path, 0o600)
    with pytest.raises(LoginFileError, match="login"):
        read_login(tmp_path)


def test_the_environment_wins_over_the_login() -> None:
    login = Login({"OPENAI_API_KEY": "stored", "OPENAI_BASE_URL": "http://stored/v1"})
    env = with_login({"OPENAI_API_KEY": "exported", "OPENAI_BASE_URL": ""}, login)
    assert env["OPENAI_API_KEY"] == "exported"
    assert env["OPENAI_BASE_URL"] == "http://stored/v1"  # empty counts as unset


def test_stored_defaults_are_the_lowest_config_layer(tmp_path: Path) -> None:
    layer = Login(defaults={"runtime": "openai", "model": "from-login"}).config_layer()
    user = tmp_path / "user.toml"
    user.write_text('[defaults]\nmodel = "from-user-file"\n')
    config = load_config({}, tmp_path, user_file=user, base=layer)
    assert config.defaults.model == "from-user-file"
    assert config.defaults.runtime == "openai"
