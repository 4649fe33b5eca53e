"""`loopd daemon status|stop` (and `serve`, what a forwarder starts)."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any

from loopd.cli.render import escape
from loopd.daemon.frames import BadFrame, receive, send
from loopd.daemon.place import Place, Unsafe, place_of


def daemon(args: argparse.Namespace) -> int:
    match args.action:
        case "serve":
            from loopd.daemon.serve import serve_daemon

            return serve_daemon(args.ready, args.first)
        case "stop":
            from loopd.daemon.forward import stop

            try:
                stopped = stop(place_of(os.environ))
            except Unsafe as err:
                print(f"loopd: the daemon's socket is refused: {escape(str(err))}", file=sys.stderr)
                return 1
            print("stopped" if stopped else "no daemon was running")
            return 0
        case _:
            return _status(args.json)


def _status(as_json: bool) -> int:
    """What the daemon of this data dir says of itself; exit 1 when none runs."""
    place = place_of(os.environ)
    status: dict[str, Any] = {"running": False, "socket": str(place.endpoint)}
    try:
        sock = place.connect()
    except Unsafe as err:
        sock, status["refused"] = None, str(err)
        print(f"loopd: the daemon's socket is refused: {escape(str(err))}", file=sys.stderr)
    except OSError as err:  # listening, but taking no one (its backlog is full)
        sock, status["error"] = None, f"the daemon takes no connection ({err})"
        print(f"loopd: {status['error']} (its log: {escape(place.log)})", file=sys.stderr)
    if sock is not None:
        with sock:
            status |= _asked(sock, place)
    if as_json:
        print(json.dumps(status, indent=2))
    elif "refused" in status or "error" in status:
        pass  # said on stderr
    elif not status["running"]:
        print(f"no daemon is running for {escape(str(place.data))}")
    else:
        print(
            f"loopd {status['version']} daemon, pid {status['pid']}, serving"
            f" {escape(str(status['data']))}\n"
            f"  {status['connections']} editor connection(s),"
            f" {len(status['sessions'])} live session(s); exits after"
            f" {status['idleSeconds']:.0f} s with none"
        )
    return 0 if status["running"] else 1


def _asked(sock: socket.socket, place: Place) -> dict[str, Any]:
    """The daemon's answer to `status`, or, when it does not answer (in the socket's
    timeout) or answers nonsense, an `error` saying so, also on stderr."""
    try:
        send(sock, {"op": "status"})
        answer = receive(sock)[0]
    except TimeoutError:
        error = f"the daemon did not answer within {sock.gettimeout():g} s"
    except (OSError, EOFError, BadFrame) as err:
        error = f"the daemon's answer could not be read ({err})"
    else:
        answer.pop("ok", None)
        return {"running": True} | answer
    print(f"loopd: {error} (its log: {escape(place.log)})", file=sys.stderr)
    return {"error": error}
