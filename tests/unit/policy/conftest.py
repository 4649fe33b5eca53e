"""Both ways of opening beneath a root: `openat2`, and the walk it falls back to."""

from __future__ import annotations

import pytest

from loopd.policy.beneath import openat2_available


@pytest.fixture(params=["openat2", "walk"])
def method(request: pytest.FixtureRequest) -> str:
    if request.param == "openat2" and not openat2_available():
        pytest.skip("openat2 is not available on this kernel")
    return str(request.param)
