"""The bearer token: only its hash is stored, 0600; it is compared in constant time;
a file anyone else could read is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopd.protocol.errors import ConfigError
from loopd.remote import token


def test_a_rotated_token_replaces_the_old_and_only_its_hash_is_kept(tmp_path: Path) -> None:
    env = {"LOOPD_HOME": str(tmp_path)}
    first = token.rotate(env)
    second = token.rotate(env)
    digest = token.stored(env)
    assert token.matches(second, digest) and not token.matches(first, digest)
    assert not token.matches(None, digest) and not token.matches("", digest)
    kept = tmp_path / "remote" / "token.sha256"
    assert second not in kept.read_text()
    assert kept.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "remote").stat().st_mode & 0o777 == 0o700


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    env = {"LOOPD_HOME": str(tmp_path)}
    token.rotate(env)
    os.chmod(tmp_path / "remote" / "token.sha256", 0o644)
    with pytest.raises(ConfigError, match="readable by others"):
        token.stored(env)


def test_no_token_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="loopd serve token"):
        token.stored({"LOOPD_HOME": str(tmp_path)})


def test_only_a_bearer_header_carries_a_token() -> None:
    assert token.bearer("Bearer abc") == "abc"
    assert token.bearer("bearer  abc ") == "abc"
    assert token.bearer("Basic abc") is None
    assert token.bearer("Bearer ") is None
    assert token.bearer(None) is None
