"""What a test needs from the machine, and what happens when it is not there: on a
developer's machine the test skips, saying how to get it; in CI (`CI` set) it fails,
since `.ci/run`'s setup installs everything and a skip there would hide a check
that never ran."""

from __future__ import annotations

import os

import pytest


def missing(what: str, how: str = "run scripts/setup.sh") -> BaseException:
    """The outcome to raise (`raise missing(...)`): a skip, or a failure in CI."""
    if os.environ.get("CI"):
        return pytest.fail.Exception(f"{what}: CI runs every check ({how})", pytrace=False)
    return pytest.skip.Exception(f"{what}: {how}")
