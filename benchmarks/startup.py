"""Start-up cost of `loopd --version` against a bare interpreter, in the same run."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROUNDS = 9


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> dict[str, dict[str, float]]:
    script = Path(sys.executable).with_name("loopd")  # the console script users run
    loopd = [str(script), "--version"]
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
