"""The command line's parser: one `Command` per subcommand, each naming its
arguments and the function that runs it.

Every subcommand imports what it needs lazily: `loopd acp` must not pay for pygls,
`loopd lsp` not for the ACP SDK, `loopd --version` for neither. A new subcommand is
one `Command` in `COMMANDS`: a small function adding its arguments and a
`module:function` taking the parsed `argparse.Namespace` and returning the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loopd import __version__

EXIT_CODES_HELP = """\
exit codes:
  0    success; for `run`, the turn ended normally
  1    the turn failed (the error is on stderr) or did not finish; a command failed
  2    usage or configuration error (nothing ran)
  130  cancelled (Ctrl-C)
"""


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    handler: str  # "module:function", imported only when this command runs


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    del parser


def _run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompt", nargs="?", help="the prompt (default: read stdin)")
    p.add_argument("--runtime", help="runtime name from `loopd catalog`")
    p.add_argument("--model", help="model id or alias")
    p.add_argument("--mode", help="plan | ask | accept_edits | full_auto")
    p.add_argument("--cwd", default=os.curdir, help="workspace root (default: here)")
    p.add_argument("--json", action="store_true", help="events as JSON lines on stdout")
    p.add_argument("--yes", action="store_true", help="allow every approval request")


def _acp_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("then", nargs="?", choices=["login"], help="login: what an editor's log-in runs")
    _no_daemon_argument(p)
    _remote_arguments(p)


def _remote_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--remote",
        metavar="URL",
        help="relay to `loopd serve` at URL (token: LOOPD_REMOTE_TOKEN or --token-file)",
    )
    p.add_argument("--token-file", metavar="FILE", help="--remote: the file holding the token")
    p.add_argument(
        "--fingerprint",
        metavar="SHA256",
        help="--remote: the server certificate's fingerprint, as `loopd serve` printed it",
    )
    p.add_argument("--ca", metavar="FILE", help="--remote: the CA (or certificate) to trust")


def _serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=["token"], help="token: make a new bearer token")
    p.add_argument("--listen", metavar="HOST:PORT", help="where to listen (port 0: any free one)")
    p.add_argument(
        "--root",
        action="append",
        metavar="DIR",
        help="a folder remote clients may open (repeatable; default: here)",
    )
    p.add_argument("--tls-cert", metavar="FILE", help="the certificate (default: self-signed)")
    p.add_argument("--tls-key", metavar="FILE", help="its private key")
    p.add_argument("--no-tls", action="store_true", help="plain HTTP (loopback only)")


def _lsp_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    _no_daemon_argument(p)
    _remote_arguments(p)


def _no_daemon_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-daemon",
        action="store_true",
        help="serve in this process, not in the shared loopd daemon (as LOOPD_DAEMON=off)",
    )


def _daemon_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=["status", "stop", "enable", "disable", "serve"],
        help="enable/disable: a systemd user service keeping it up from login;"
        " serve: what editors start",
    )
    p.add_argument("--ready", type=int, metavar="FD", help=argparse.SUPPRESS)
    p.add_argument("--first", choices=["acp", "lsp"], help=argparse.SUPPRESS)
    _json_argument(p)


def _json_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _sessions_arguments(p: argparse.ArgumentParser) -> None:
    actions = ["list", "show", "delete", "rewind"]
    p.add_argument("action", nargs="?", default="list", choices=actions)
    p.add_argument("session_id", nargs="?", help="for show, delete and rewind")
    p.add_argument("point", nargs="?", help="rewind: to before prompt N, or `redo`")
    p.add_argument("--cwd", help="only sessions of this workspace")
    p.add_argument(
        "--scope",
        choices=["both", "code", "conversation"],
        default="both",
        help="rewind: what to put back (default both)",
    )
    p.add_argument("--force", action="store_true", help="rewind: overwrite files changed since")
    _json_argument(p)


def _config_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=["path", "show", "schema"],
        help="path: the files read; show: the merged config; schema: its JSON Schema",
    )


def _folder_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default=os.curdir, help="the folder (default: here)")


def _completion_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=["bash", "zsh", "fish"])


COMMANDS: tuple[Command, ...] = (
    Command("run", "run one headless turn", _run_arguments, "loopd.cli.commands:run"),
    Command("acp", "serve the Agent Client Protocol on stdio (Zed)", _acp_arguments,
            "loopd.cli.commands:acp"),
    Command("lsp", "serve LSP with the loopd extension (VS Code, Neovim)", _lsp_arguments,
            "loopd.cli.commands:lsp"),
    Command("serve", "serve the daemon's sessions over ACP's HTTP/WebSocket transport",
            _serve_arguments, "loopd.remote.serve:serve_command"),
    Command("daemon", "the loopd daemon editors share: status, stop, enable, disable",
            _daemon_arguments,
            "loopd.cli.daemon:daemon"),
    Command("catalog", "list the runtimes this machine can use", _json_argument,
            "loopd.cli.commands:catalog"),
    Command("sessions", "list, show, delete or rewind stored sessions", _sessions_arguments,
            "loopd.cli.commands:sessions"),
    Command("login", "set up a model provider and its key (asks in the terminal)",
            _no_arguments, "loopd.cli.login:login_command"),
    Command("logout", "forget what `loopd login` stored", _no_arguments,
            "loopd.cli.login:logout_command"),
    Command("doctor", "what is configured and found: files, keys, runtimes, tools, sandbox",
            _no_arguments, "loopd.cli.doctor:doctor"),
    Command("config", "the config files: their paths, the merged result, its JSON Schema",
            _config_arguments, "loopd.cli.config:config"),
    Command("trust", "let a folder's .loopd/config.toml apply, as it is now",
            _folder_argument, "loopd.cli.trust:trust"),
    Command("untrust", "make a folder's .loopd/config.toml inert again", _folder_argument,
            "loopd.cli.trust:untrust"),
    Command("completion", "print a shell completion script (bash, zsh or fish)",
            _completion_arguments, "loopd.cli.completion:completion"),
    Command("demo", "one scripted turn end to end, no API key needed", _no_arguments,
            "loopd.cli.commands:demo"),
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loopd",
        description="A coding-agent server for editors (ACP, LSP) and terminals.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"loopd {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs on stderr")
    # `-v` after the subcommand too; SUPPRESS keeps an absent one from undoing the first.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logs"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        child = sub.add_parser(
            command.name,
            help=command.help,
            description=command.help,
            parents=[common],
            epilog=EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.arguments(child)
    return parser


def parse_and_run(argv: Sequence[str]) -> int:
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
    from loopd.cli.exits import EXIT_CANCELLED, EXIT_FAILED, EXIT_USAGE
    from loopd.protocol.errors import ConfigError, LoopdError

    try:
        return _dispatch(args)
    except ConfigError as err:
        print(f"loopd: {err}", file=sys.stderr)
        return EXIT_USAGE
    except LoopdError as err:
        print(f"loopd: {err}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    except BrokenPipeError:
        # The reader left (`loopd doctor | head -3`): stop quietly, and keep Python's
        # own flush at exit from failing again on the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED


def _dispatch(args: argparse.Namespace) -> int:
    command = next(c for c in COMMANDS if c.name == args.command)
    module, _, function = command.handler.partition(":")
    handler: Callable[[argparse.Namespace], int] = getattr(
        importlib.import_module(module),  # noqa: TID251 (a loopd module)
        function,
    )
    return handler(args)
