"""`python -m benchmarks [NAME ...]`: run the benchmarks and print their ratios."""

from __future__ import annotations

import importlib
import sys

ALL = (
    "turn",
    "startup",
    "acp_start",
    "context",
    "warm_start",
    "proxy",
    "idle",
    "load",
    "checkpoints",
    "remote",
    "seal",
)


def main(names: list[str]) -> int:
    for name in names or ALL:
        module = importlib.import_module(f"benchmarks.{name}")  # noqa: TID251 (ours)
        for title, figures in module.main().items():
            shown = ", ".join(f"{k}={v:.3f}" for k, v in figures.items())
            print(f"{name}: {title}: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
