"""Test runs side by side never share a foreign CLI's state dir."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.e2e.conftest import private_cache_dir


def test_concurrent_runs_get_distinct_cache_dirs(tmp_path: Path) -> None:
    (tmp_path / "codex0").mkdir()  # what another run's fixture may already hold
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda _: private_cache_dir(tmp_path), range(32)))
    assert len(set(made)) == 32
    assert all(p.is_dir() and p.parent == tmp_path for p in made)
    assert tmp_path / "codex0" not in made
