"""`loopd acp` and `loopd lsp` as forwarders: standard library only, nothing heavy.

`forward` finds (or starts) the daemon of this data dir, hands it the editor's
stdin, stdout and stderr with the cwd, arguments and environment, and waits for
the connection's exit status. It returns None when the connection should be served
in this process instead: the daemon is of another version and busy (an idle one is
replaced), or it could not be started, or its folder is not private (said on
stderr). The editor then gets the same loopd, only slower to start.

After the handover the forwarder holds no copy of stdin or stdout: when the daemon
ends the connection, or dies, the editor sees its pipes close at once. When the
forwarder dies (the editor killed it), the daemon sees the control socket close
and ends the connection: cancels its turn, detaches its sessions.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import stat
import sys
import time
from collections.abc import Mapping

from loopd import __version__
from loopd.daemon import early
from loopd.daemon.frames import LISTENING, LOST, BadFrame, receive, send
from loopd.daemon.place import Place, Unsafe, place_of
from loopd.home import user_config_path
from loopd.streams import read_ahead

START_TIMEOUT = 20.0  # seconds for a new daemon to listen
CONFIG_MAX_BYTES = 1 << 20  # as `loopd.config.trust.store.MAX_BYTES` (not imported on this path)
_INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ")


def forward(protocol: str) -> int | None:
    if not _open(0) or not _open(1):
        return None  # served here, which says so (see `loopd.streams.stdio`)
    env = dict(os.environ)
    idle = daemon_idle(env)
    if idle is None:
        return None
    env.setdefault("LOOPD_DAEMON_IDLE", idle)
    place = place_of(env)
    try:
        place.prepare()
        return _forward(place, protocol, env)
    except Unsafe as err:
        _say(f"not using the loopd daemon: {err}")
    except (OSError, BadFrame, EOFError) as err:
        _say(f"the loopd daemon could not be reached ({err}); serving here")
    return None


def daemon_idle(env: Mapping[str, str]) -> str | None:
    """The daemon's idle seconds, or None when editors are not to share a daemon:
    `LOOPD_DAEMON=off`, or `[daemon] enabled = false` in the user config (read here
    with tomllib alone; a file that does not parse is left for loopd to report)."""
    if env.get("LOOPD_DAEMON", "").lower() in ("off", "0", "false", "no"):
        return None
    raw = _own_config(user_config_path(env))
    if raw is None:
        return "600"
    # only when there is a file: tomllib costs a warm start some milliseconds
    from loopd.protocol.tomlvalues import loads_toml

    try:
        table = loads_toml(raw.decode()).get("daemon", {})
    except ValueError:
        table = {}
    if not isinstance(table, dict) or table.get("enabled") is False:
        return None if isinstance(table, dict) else "600"
    idle = table.get("idle_seconds", 600)
    return str(idle) if isinstance(idle, int) and not isinstance(idle, bool) else "600"


def _forward(place: Place, protocol: str, env: dict[str, str]) -> int | None:
    sock = handover(place, protocol, env, os.getcwd(), (0, 1, 2), answer_early=True)
    if sock is None:
        return None
    with sock:
        read_ahead.handed_over()
        _let_go()
        return _wait(sock)


def handover(
    place: Place,
    protocol: str,
    env: dict[str, str],
    cwd: str,
    fds: tuple[int, int, int],
    *,
    answer_early: bool = False,
) -> socket.socket | None:
    """Hand `fds` (a connection's stdin, stdout and stderr) to the daemon, started if
    none answers, and return the control socket once it serves them; None when it
    would not (it closed its copies first). `loopd serve` hands over pipes of its own
    for each remote connection the same way (`loopd.remote.upstream`). With
    `answer_early` (`fds` are this process's own stdio), ACP's `initialize` may be
    answered here while a daemon starts (`_early`)."""
    hello: dict[str, object] = {
        "op": "connect", "version": __version__, "protocol": protocol,
        "data": os.path.realpath(place.data), "cwd": cwd, "env": env,
    }  # fmt: skip
    for attempt in range(2):
        sock = place.connect()
        starting = None if sock else _spawn(place, env, protocol)
        if protocol == "acp" and not attempt:  # answered here while a daemon starts
            hello["early"] = _early(place, env, answer=answer_early and starting is not None)
        sock = sock or (_started(place, starting) if starting is not None else None)
        if sock is None:
            _say(f"the loopd daemon did not start (see {place.log}); serving here")
            return None
        try:
            send(sock, hello, fds=fds)
            sock.settimeout(None)  # it holds the editor's pipes now: never serve beside it
            reply, _ = receive(sock)  # (it closes them before any refusal, or by dying)
        except BaseException:
            sock.close()
            raise
        if reply.get("ok"):
            return sock
        sock.close()
        if reply.get("error") != "version" or not reply.get("idle") or attempt:
            return None  # a busy daemon of another version keeps its editors
        stop(place)  # an idle one of another version makes way
    return None


def _wait(sock: socket.socket) -> int:
    """The connection's exit status, once the daemon says it ended."""
    try:
        while True:
            message, _ = receive(sock)
            if "exit" in message:
                return int(message["exit"])
    except (EOFError, BadFrame, OSError, ValueError, TypeError):
        _say("the loopd daemon went away; the session is kept, load it again")
        return 1


def _let_go() -> None:
    """Drop this process's copies of stdin and stdout (the daemon has them now)."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _early(place: Place, env: Mapping[str, str], answer: bool) -> dict[str, object] | None:
    """With `answer` (a daemon is starting), ACP's `initialize` answered here when a
    daemon of this code wrote its answer down (`loopd.daemon.early`). What the daemon
    needs to know of it (and to write its own down), or None when the SDK is not
    where this loopd would import it from. A running daemon answers at once itself."""
    sdk = early.sdk_dir_on_path()
    if sdk is None:
        return None
    key = early.key(early.code_stamp(sdk), _own_config(user_config_path(env)))
    path = early.answers_path(place.folder, place.name)
    read = early.answer_early(path, key) if answer else None
    return {"key": key, "readAhead": None if read is None else read.to_wire()}


def _spawn(place: Place, env: Mapping[str, str], protocol: str) -> int:
    """Start a daemon in the background; the pipe on which it says that it listens,
    or that another forwarder's won the race (the data dir's lock lets one serve)."""
    import subprocess  # only to start one

    log = os.open(place.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    ready, told = os.pipe()
    try:
        subprocess.Popen(
            [sys.executable, "-m", "loopd.daemon", "--ready", str(told), "--first", protocol],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/", pass_fds=(told,),
            env=daemon_env(env), start_new_session=True,
        )  # fmt: skip
    except BaseException:
        os.close(ready)
        raise
    finally:
        os.close(told)
        os.close(log)
    return ready


def _started(place: Place, ready: int) -> socket.socket | None:
    """A connection to the daemon `_spawn` started; None if it never listens (a
    daemon that dies first says nothing on its pipe)."""
    try:
        news = os.read(ready, 1) if select.select([ready], [], [], START_TIMEOUT)[0] else b""
    finally:
        os.close(ready)
    if news == LISTENING:
        return place.connect()
    return _connect_soon(place) if news == LOST else None


def _connect_soon(place: Place) -> socket.socket | None:
    """A connection once the daemon listens: the one just started, or, when it lost
    the race to another forwarder's, that one (still starting, perhaps)."""
    deadline = time.monotonic() + START_TIMEOUT
    pause = 0.002
    while (sock := place.connect()) is None and time.monotonic() < deadline:
        time.sleep(pause)  # the only wait: a daemon another forwarder is starting
        pause = min(pause * 2, 0.05)
    return sock


def daemon_env(env: Mapping[str, str]) -> dict[str, str]:
    """What the daemon itself runs with: where things are, never credentials. Each
    connection brings its own environment for its sessions.

    Nothing of the starting editor that would change what the daemon imports or
    where it writes for every later editor: not its PYTHONPATH (the daemon imports
    pygls, the ACP SDK and the providers for all of them), nor its TMPDIR. The
    daemon's one import path is where this loopd itself was imported from."""
    keep = {k: v for k, v in env.items() if k in _INHERITED or k.startswith(("LC_", "XDG_"))}
    keep |= {k: v for k, v in env.items() if k in ("LOOPD_HOME", "LOOPD_DAEMON_IDLE")}
    return keep | _own_import_path()


def _own_import_path() -> dict[str, str]:
    """PYTHONPATH for the daemon: the folder this loopd package sits in, unless the
    interpreter finds it there by itself (installed in its site-packages)."""
    import site

    import loopd

    folder = os.path.dirname(os.path.dirname(os.path.realpath(loopd.__file__)))
    sites = {os.path.realpath(p) for p in (*site.getsitepackages(), site.getusersitepackages())}
    return {} if folder in sites else {"PYTHONPATH": folder}


def stop(place: Place, timeout: float = 30.0) -> bool:
    """Ask the daemon to exit and wait until it has (it hangs up last); False if
    none ran."""
    sock = place.connect(timeout)
    if sock is None:
        return False
    with sock, contextlib.suppress(EOFError, OSError, BadFrame):
        send(sock, {"op": "stop", "version": __version__})
        while True:
            receive(sock)
    return True


def _own_config(path: str) -> bytes | None:
    """The person's config file, or None. With the standard library alone (this is
    every editor's start), but as every file loopd reads: a FIFO there must not
    block the editor, a device or a huge file not be read whole."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = file.read(CONFIG_MAX_BYTES + 1)
    return raw if len(raw) <= CONFIG_MAX_BYTES else None


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _say(text: str) -> None:
    sys.stderr.write(f"loopd: {text}\n")
    sys.stderr.flush()
