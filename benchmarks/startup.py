"""Start-up cost of `loopd --version` against a bare interpreter, in the same run."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

ROUNDS = 9


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> dict[str, dict[str, float]]:
    loopd = [sys.executable, "-m", "loopd", "--version"]
    bare = [sys.executable, "-c", "pass"]
    subject, baseline = [], []
    for _ in range(ROUNDS):
        baseline.append(_time(bare))
        subject.append(_time(loopd))
    s, b = statistics.median(subject), statistics.median(baseline)
    return {
        "loopd --version vs python -c pass": {
            "subject_ms": s * 1000,
            "baseline_ms": b * 1000,
            "ratio": s / b,
        }
    }
