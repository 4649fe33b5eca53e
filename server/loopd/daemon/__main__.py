"""`python -m loopd.daemon [--ready FD] [--first acp|lsp]`: the daemon, as a
forwarder starts it, without the command line's parser (`loopd daemon serve`
takes the same arguments by hand). Unknown arguments are an error, exit 2."""

from __future__ import annotations

import sys

from loopd.daemon.serve import serve_daemon


def main(argv: list[str]) -> int:
    options: dict[str, str] = {}
    pairs = iter(argv)
    for flag in pairs:
        value = next(pairs, None)
        if flag not in ("--ready", "--first") or value is None:
            sys.stderr.write("usage: python -m loopd.daemon [--ready FD] [--first acp|lsp]\n")
            return 2
        options[flag] = value
    ready = options.get("--ready")
    return serve_daemon(int(ready) if ready is not None else None, options.get("--first"))


raise SystemExit(main(sys.argv[1:]))
