"""`loopd daemon status|stop|enable|disable` (and `serve`, what a forwarder starts).

`enable` and `disable` install and remove a systemd user service that keeps the
daemon up from login (`loopd.daemon.unit`)."""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import subprocess
import sys
from typing import Any

from loopd.cli.render import escape
from loopd.daemon.frames import BadFrame, receive, send
from loopd.daemon.place import Unsafe, place_of


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
        case "enable" | "disable":
            return _unit(args.action)
        case _:
            return _status(args.json)


def _unit(action: str) -> int:
    from loopd.daemon import unit

    try:
        if action == "enable":
            print(f"enabled: {escape(str(unit.enable(os.environ)))} starts the daemon at login")
            return 0
        removed = unit.disable(os.environ)
    except (unit.NoSystemd, FileExistsError, ValueError) as err:
        print(f"loopd: cannot {action} the daemon's unit: {escape(str(err))}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as err:
        said = escape((err.stderr or "").strip())
        print(f"loopd: `{' '.join(err.cmd)}` failed: {said}", file=sys.stderr)
        return 1
    print(f"disabled: removed {escape(str(removed))}" if removed else "no loopd unit was enabled")
    return 0


def daemon_status() -> dict[str, Any]:
    """What the daemon of this data dir says of itself (`running`: whether one
    answers; `refused`: why its socket is not trusted; `error`: why it did not
    answer). Prints nothing: `loopd daemon status` and `loopd doctor` say it."""
    place = place_of(os.environ)
    status: dict[str, Any] = {"running": False, "socket": str(place.endpoint)}
    try:
        sock = place.connect()
    except Unsafe as err:
        sock, status["refused"] = None, str(err)
    except OSError as err:  # listening, but taking no one (its backlog is full)
        sock, status["error"] = None, f"the daemon takes no connection ({err})"
    if sock is not None:
        with sock:
            status |= _asked(sock)
    if math.isinf(status.get("idleSeconds", 0)):
        status["idleSeconds"] = None  # never idles out (a systemd unit's daemon)
    return status


def _status(as_json: bool) -> int:
    """What the daemon of this data dir says of itself; exit 1 when none runs or it
    does not answer."""
    status = daemon_status()
    place = place_of(os.environ)
    if "refused" in status:
        print(
            f"loopd: the daemon's socket is refused: {escape(status['refused'])}", file=sys.stderr
        )
    elif "error" in status:
        print(f"loopd: {status['error']} (its log: {escape(place.log)})", file=sys.stderr)
    if as_json:
        print(json.dumps(status, indent=2))
    elif "refused" in status or "error" in status:
        pass  # said on stderr
    elif not status["running"]:
        print(f"no daemon is running for {escape(str(place.data))}")
    else:
        idle = status["idleSeconds"]
        print(
            f"loopd {status['version']} daemon, pid {status['pid']}, serving"
            f" {escape(str(status['data']))}\n"
            f"  {status['connections']} editor connection(s),"
            f" {len(status['sessions'])} live session(s); "
            + ("never exits when idle" if idle is None else f"exits after {idle:.0f} s with none")
        )
    return 0 if status["running"] else 1


def _asked(sock: socket.socket) -> dict[str, Any]:
    """The daemon's answer to `status`, or, when it does not answer (in the socket's
    timeout) or answers nonsense, an `error` saying so."""
    try:
        send(sock, {"op": "status"})
        answer = receive(sock)[0]
    except TimeoutError:
        return {"error": f"the daemon did not answer within {sock.gettimeout():g} s"}
    except (OSError, EOFError, BadFrame) as err:
        return {"error": f"the daemon's answer could not be read ({err})"}
    answer.pop("ok", None)
    return {"running": True} | answer
