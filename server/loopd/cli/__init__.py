"""`loopd` command line: run | acp | lsp | catalog | sessions | doctor | trust | untrust |
demo.

Every subcommand imports what it needs lazily: `loopd acp` must not pay for pygls,
`loopd lsp` not for the ACP SDK, `loopd --version` for neither.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from loopd import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loopd", description="A coding-agent server for editors (ACP, LSP) and terminals."
    )
    parser.add_argument("--version", action="version", version=f"loopd {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run one headless turn")
    run.add_argument("prompt", nargs="?", help="the prompt (default: read stdin)")
    run.add_argument("--runtime", help="runtime name from `loopd catalog`")
    run.add_argument("--model", help="model id or alias")
    run.add_argument("--mode", help="plan | ask | accept_edits | full_auto")
    run.add_argument("--cwd", default=os.getcwd(), help="workspace root (default: here)")
    run.add_argument("--json", action="store_true", help="events as JSON lines on stdout")
    run.add_argument("--yes", action="store_true", help="allow every approval request")

    sub.add_parser("acp", help="serve the Agent Client Protocol on stdio (Zed)")
    lsp = sub.add_parser("lsp", help="serve LSP with the loopd extension (VS Code, Neovim)")
    lsp.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")

    catalog = sub.add_parser("catalog", help="list the runtimes this machine can use")
    catalog.add_argument("--json", action="store_true")

    sessions = sub.add_parser("sessions", help="list, show or delete stored sessions")
    sessions.add_argument("action", nargs="?", default="list", choices=["list", "show", "delete"])
    sessions.add_argument("session_id", nargs="?")
    sessions.add_argument("--cwd", help="only sessions of this workspace")
    sessions.add_argument("--json", action="store_true")

    sub.add_parser("doctor", help="what is configured, which CLIs and sandbox were found")
    trust = sub.add_parser("trust", help="let a folder's .loopd/config.toml apply, as it is now")
    trust.add_argument("dir", nargs="?", default=os.getcwd(), help="the folder (default: here)")
    untrust = sub.add_parser("untrust", help="make a folder's .loopd/config.toml inert again")
    untrust.add_argument("dir", nargs="?", default=os.getcwd(), help="the folder (default: here)")
    sub.add_parser("demo", help="one scripted turn end to end, no API key needed")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # `--version` and `--help` exit here, importing nothing
    import logging

    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="loopd %(levelname)s %(name)s: %(message)s",
    )
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    from loopd.protocol.errors import LoopdError

    try:
        return _dispatch(args)
    except LoopdError as err:
        print(f"loopd: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    from loopd.cli import commands

    match args.command:
        case "run":
            return commands.run(args)
        case "acp":
            return commands.acp()
        case "lsp":
            return commands.lsp(args.tcp)
        case "catalog":
            return commands.catalog(args.json)
        case "sessions":
            return commands.sessions(args.action, args.session_id, args.cwd, args.json)
        case "doctor":
            return commands.doctor()
        case "trust":
            return commands.trust(args.dir)
        case "untrust":
            return commands.untrust(args.dir)
        case "demo":
            return commands.demo()
    raise AssertionError(f"unhandled command {args.command}")
