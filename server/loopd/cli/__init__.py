"""`loopd` command line (the parser and its commands: `loopd.cli.parser`).

`main` first takes the editor's path: `loopd acp` and `loopd lsp` with no other
argument, as editors start loopd, go straight to the forwarder, which loads the
standard library and little else (`loopd.daemon.forward`), so a warm start costs
an interpreter and a handshake. Everything else, and the editor's connection when
no daemon can serve it, goes through the parser.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["acp"], ["lsp"]):
        from loopd.daemon.forward import forward

        code = forward(args[0])
        if code is not None:
            return code
        args.append("--no-daemon")  # served here; the forwarder said why, if it had to
    from loopd.cli.parser import parse_and_run

    return parse_and_run(args)
