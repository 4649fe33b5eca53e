"""What the seal's protected-file check costs a turn, on the checkpoint benchmark's
10,000-file repository (about 20 MB of source).

The check snapshots every protected file when a turn begins and again when it ends.
Each snapshot keeps a file's identity (inode, size, times) and the sha256 of its
bytes, read through the session's reader, up to `MAX_DIGESTED` bytes a snapshot:
a command that writes through a memory mapping it made earlier moves nothing but
the bytes. The baseline is the same snapshot with digests off (`MAX_DIGESTED` 0:
identity alone, as before digests), in the same run; rounds alternate.

Two protected sets: every file (`**/*.py`, all 10,000 digested) and one package
(`pkg0/**`, 1,000 files). Figures: ms per turn (both snapshots), and the ratio.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.checkpoints import make_repo
from loopd.engine.done import DoneSet
from loopd.tools import criteria
from loopd.tools.criteria import SandboxedDone
from loopd.tools.env import ToolEnv

ROUNDS = 5


async def _turn_check(root: Path, protected: str) -> float:
    """ms of one turn's two snapshots (begin and end) of `protected` under `root`."""
    done = SandboxedDone(ToolEnv(roots=(str(root),)), DoneSet(protected=(protected,)))
    started = time.perf_counter()
    await done.begin_turn()
    writes = await done.protected_writes()
    elapsed = (time.perf_counter() - started) * 1000
    assert not writes.paths, writes  # nothing moved
    return elapsed


def _digests_against_identity(root: Path, protected: str) -> dict[str, float]:
    digested, identity = [], []
    saved = criteria.MAX_DIGESTED
    try:
        for _ in range(ROUNDS):
            criteria.MAX_DIGESTED = saved
            digested.append(asyncio.run(_turn_check(root, protected)))
            criteria.MAX_DIGESTED = 0  # identity alone
            identity.append(asyncio.run(_turn_check(root, protected)))
    finally:
        criteria.MAX_DIGESTED = saved
    with_ms, without_ms = statistics.median(digested), statistics.median(identity)
    return {"digests_ms": with_ms, "identity_ms": without_ms, "ratio": with_ms / without_ms}


def main() -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        make_repo(root)
        return {
            "a turn's protected check, 10,000 files protected": _digests_against_identity(
                root, "**/*.py"
            ),
            "a turn's protected check, 1,000 files protected": _digests_against_identity(
                root, "pkg0/**"
            ),
        }


if __name__ == "__main__":
    for title, figures in main().items():
        print(f"{title}: " + ", ".join(f"{k}={v:.3f}" for k, v in figures.items()))
