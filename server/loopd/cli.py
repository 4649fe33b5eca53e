"""`loopd` command line: run | acp | lsp | catalog | sessions | doctor | demo.

Every subcommand imports what it needs lazily: `loopd acp` must not pay for pygls,
`loopd lsp` not for the ACP SDK, `loopd --version` for neither.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from loopd import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loopd", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"loopd {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return 0
