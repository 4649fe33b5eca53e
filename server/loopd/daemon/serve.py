"""`loopd daemon serve`: the daemon of one data dir (started by a forwarder).

It takes the data dir's lock (a second daemon exits at once), listens on the socket
in the private folder (`loopd.daemon.place`), says so on the `--ready` pipe, and
then loads what connections need. Every peer must run as this user (SO_PEERCRED).
A peer sends one frame (`loopd.daemon.frames`): `status`, `stop`, or `connect` with
the editor's descriptors, whole within `HELLO_TIMEOUT`, read on the event loop (a
slow or silent peer holds no thread: it cannot keep others waiting). A forwarder
of another version is refused, told whether the daemon is idle (it may then be
stopped and replaced). Each connection is served until its editor hangs up or its
forwarder goes away (the control socket closes), then the forwarder is told the
exit status.

With no connection for `LOOPD_DAEMON_IDLE` seconds (default 600), or on `stop`,
the daemon closes its sessions (each is journaled as it goes: nothing is lost, and
a later daemon loads them), removes its socket and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import importlib
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopd import __version__
from loopd.daemon import early
from loopd.daemon.frames import LISTENING, LOST, BadFrame, receive_within, send
from loopd.daemon.place import Place, Unsafe, place_of, require_own_peer, short_path
from loopd.daemon.stderr import RoutedStderr

if TYPE_CHECKING:  # loaded after the socket listens (see `_load_stack`)
    from loopd.acp.handshake import Record
    from loopd.app import App
    from loopd.sessions.table import SessionTable

log = logging.getLogger(__name__)

DEFAULT_IDLE = 600.0
HELLO_TIMEOUT = 10.0  # seconds for a peer's whole first frame, read on the event loop
ACCEPT_PAUSE = 0.2  # seconds before accepting again when that failed (no descriptor left)


def serve_daemon(ready_fd: int | None, first: str | None = None) -> int:
    """Run the daemon of the data dir this process's environment names. `first` is
    the protocol of the editor that started it, whose stack loads before all else."""
    sys.stderr = RoutedStderr(sys.__stderr__ or sys.stderr)
    logging.basicConfig(  # as in-process: warnings, to the editor's stderr or the log
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s"
    )
    log.setLevel(logging.INFO)  # and the daemon's own life, to its log
    place = place_of(os.environ)
    place.prepare()
    lock = os.open(place.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log.info("another daemon serves %s", place.data)
        _tell(ready_fd, LOST)
        return 0
    listener = _listen(place)
    _tell(ready_fd, LISTENING)
    log.info("loopd %s daemon %d serves %s", __version__, os.getpid(), place.data)
    idle = float(os.environ.get("LOOPD_DAEMON_IDLE") or DEFAULT_IDLE)
    daemon = Daemon(place, listener, idle, first)
    try:
        asyncio.run(daemon.run())
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(place.endpoint)
        listener.close()
        os.close(lock)  # a new daemon may start now
        for conn in daemon.stoppers:
            conn.close()  # `loopd daemon stop` returns when this one is gone
    return 0


def _tell(ready_fd: int | None, news: bytes) -> None:
    """Tell the forwarder that started this daemon (see `loopd.daemon.forward`)."""
    if ready_fd is not None:
        with contextlib.suppress(OSError):
            os.write(ready_fd, news)
        os.close(ready_fd)


def _listen(place: Place) -> socket.socket:
    """The listening socket, private from birth (umask), replacing a dead one's."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(place.endpoint)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(short_path(place.endpoint))
    finally:
        os.umask(old)
    listener.listen(64)
    listener.setblocking(False)
    return listener


@dataclass(slots=True)
class Daemon:
    place: Place
    listener: socket.socket
    idle: float
    first: str | None = None  # the starting editor's protocol
    connections: set[asyncio.Task[Any]] = field(default_factory=set)
    table: SessionTable | None = None
    apps: list[App] = field(default_factory=list)  # retired, closed when unused
    stoppers: list[socket.socket] = field(default_factory=list)  # who asked to stop
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    since: float = field(default_factory=time.monotonic)  # idle since, or started
    leaving: int = 0  # connections whose editor is gone, still closing (not busy)
    real_data: str = ""  # the data dir's real path, which a forwarder must name
    built: threading.Event = field(default_factory=threading.Event)  # a first app (see run)

    def __post_init__(self) -> None:
        self.real_data = os.path.realpath(self.place.data)

    async def run(self) -> None:
        warming = asyncio.create_task(asyncio.to_thread(_warm_imports, self.first, self.built))
        accepting = asyncio.create_task(self._accept())
        idling = asyncio.create_task(self._idle())
        await self.stopping.wait()
        self.built.set()  # the warm-up waits for no first app any more
        for task in (accepting, idling, *self.connections):
            task.cancel()
        await asyncio.gather(warming, *self.connections, return_exceptions=True)
        if self.table is not None:
            await self._close_all()

    async def _accept(self) -> None:
        """Accept peers for as long as the daemon lives. Running out of descriptors
        (peers holding them all) pauses accepting, never ends it: they are given
        back as those peers go, at the latest at their hello's deadline."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(self.listener)
            except OSError as err:
                log.warning("could not accept a connection (%s); trying again", err)
                await asyncio.sleep(ACCEPT_PAUSE)
                continue
            task = asyncio.create_task(self._handle(conn))
            self.connections.add(task)
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[Any]) -> None:
        self.connections.discard(task)
        if not self.connections:
            self.since = time.monotonic()

    async def _idle(self) -> None:
        while True:
            await asyncio.sleep(min(self.idle, 5.0))
            quiet = not self.connections and self._no_sessions()
            if quiet and time.monotonic() - self.since >= self.idle:
                log.info("idle for %.0f s: exiting", self.idle)
                self.stopping.set()

    def _no_sessions(self) -> bool:
        return self.table is None or not self.table.live

    async def _handle(self, conn: socket.socket) -> None:
        try:
            require_own_peer(conn)
            message, fds = await receive_within(conn, HELLO_TIMEOUT)
            conn.settimeout(HELLO_TIMEOUT)  # for the small answers sent back
        except TimeoutError:
            log.warning("refused a peer that sent no request within %g s", HELLO_TIMEOUT)
            conn.close()
            return
        except (Unsafe, EOFError, BadFrame, OSError) as err:
            log.warning("refused a connection: %s", err)
            conn.close()
            return
        if message.get("op") == "stop":
            self.stoppers.append(conn)  # hung up by the exit: the caller waits for it
            await self._answer(conn, message, fds)
            return
        with conn:
            await self._answer(conn, message, fds)

    async def _answer(self, conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
        """Answer one request. The editor's descriptors are kept only by a connection
        that is served: any other answer closes them at once (a copy kept here would
        keep the editor's pipes open after its loopd exited)."""
        op = message.get("op")
        same = message.get("version") == __version__
        ours = message.get("data") == self.real_data
        served = op == "connect" and same and ours and len(fds) == 3
        if not served:
            for fd in fds:
                os.close(fd)
        match op:
            case "status":
                send(conn, self.status())
            case "stop":
                send(conn, {"ok": True, "pid": os.getpid()})
                self.stopping.set()
            case "connect" if not same:
                busy = len(self.connections) - self.leaving > 1  # the asking one aside
                idle = not busy and self._no_sessions()
                send(conn, {"ok": False, "error": "version", "version": __version__, "idle": idle})
            case "connect" if not ours:
                send(conn, {"ok": False, "error": "data", "data": str(self.place.data)})
            case "connect" if served:
                await self._connect(conn, message, fds)
            case _:
                send(conn, {"ok": False, "error": f"unknown request {op!r}"})

    async def _connect(self, conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
        from loopd.protocol.errors import ConfigError

        try:  # the editor's descriptors are closed if it is not served
            await asyncio.to_thread(_load_stack, message.get("protocol"))
            from loopd.daemon.connection import Hello, serve_editor

            hello = Hello.of(message)
            table = self.table if self.table else await asyncio.to_thread(self._open_table)
        except BaseException as err:
            for fd in fds:
                os.close(fd)
            if not isinstance(err, ConfigError):
                raise
            send(conn, {"ok": False, "error": str(err)})
            return
        send(conn, {"ok": True, "pid": os.getpid()})
        record = self._recorder(hello.early_key)
        serving = asyncio.create_task(
            serve_editor(hello, fds, table, self.apps.append, record, self.built.set)
        )
        hangup = asyncio.create_task(_hung_up(conn))
        try:
            await asyncio.wait([serving, hangup], return_when=asyncio.FIRST_COMPLETED)
        finally:
            # A connection closing (its build may still be finishing, if the editor
            # left at once) does not keep the daemon from being idle.
            self.leaving += 1
            try:
                for task in (serving, hangup):
                    task.cancel()
                await asyncio.gather(serving, hangup, return_exceptions=True)
                await self._sweep()
            finally:
                self.leaving -= 1
        code = 1 if serving.cancelled() or serving.exception() else 0
        with contextlib.suppress(OSError):
            send(conn, {"exit": code})

    def _recorder(self, key: str | None) -> Record | None:
        """Writes down the `initialize` answer under the forwarder's key, when that
        key's code is the code this daemon runs (`loopd.daemon.early`)."""
        if key is None or not key.startswith(f"{_loaded_stamp.get('acp')}:"):
            return None
        path = early.answers_path(self.place.folder, self.place.name)
        return lambda params, result: early.record(path, key, params, result)

    def _open_table(self) -> SessionTable:
        from pathlib import Path

        from loopd.sessions.table import SessionTable
        from loopd.store.lease import Leases
        from loopd.store.sqlite import SqliteStore

        if self.table is None:
            store = SqliteStore(Path(self.place.data) / "sessions.db")
            self.table = SessionTable(store, Leases(store))
        return self.table

    async def _sweep(self) -> None:
        """Close the apps of ended connections that no live session runs on."""
        for app in [a for a in self.apps if not a.manager.runs_sessions()]:
            self.apps.remove(app)
            await app.release()

    async def _close_all(self) -> None:
        assert self.table is not None
        managers = {id(live.owner): live.owner for live in self.table.live.values()}
        for app in self.apps:
            managers[id(app.manager)] = app.manager
        for manager in managers.values():
            await manager.shutdown()  # type: ignore[attr-defined]
        for app in self.apps:
            await app.release()
        self.table.store.close()

    def status(self) -> dict[str, Any]:
        return {
            "ok": True, "pid": os.getpid(), "version": __version__,
            "data": str(self.place.data), "connections": max(len(self.connections) - 1, 0),
            "sessions": sorted(self.table.live) if self.table else [],
            "idleSeconds": self.idle,
        }  # fmt: skip


def _warm_imports(first: str | None, built: threading.Event) -> None:
    """What every connection needs, loaded once the socket listens: the stack of
    the editor that started the daemon first (its `initialize` waits for nothing
    else; the forwarder is connecting meanwhile), then the app and its runtimes;
    and once the first connection's app is built (its `session/new` waits for it),
    the HTTP transport (~0.15 s that would compete with that build for the
    interpreter). The other protocol's stack is loaded by the first editor that
    speaks it (`_load_stack`)."""
    _load_stack(first)
    import loopd.app
    import loopd.daemon.connection  # noqa: F401
    from loopd.providers.sse import prepare_transport

    built.wait()
    prepare_transport()
    gc.freeze()  # see `_load_stack`


def _load_stack(protocol: object) -> None:
    """The stack a connection speaking `protocol` needs (the ACP SDK, or pygls with
    lsprotocol), loaded by the first editor that speaks it, off the event loop.
    Never both at the first editor's start: loading the other beside it cost that
    start ~0.4 s (`benchmarks/warm_start.py`), and a daemon serving Zed alone never
    needs pygls (nor its memory).

    pygls's first `initialize` answers also build what later ones reuse: they are
    rehearsed here (`loopd.lsp.server.rehearse`).

    What an import made lives as long as the daemon: it is frozen out of the
    garbage collector's reach (a full collection over the SDK's schema classes
    costs ~50 ms, mid-turn as anywhere). Only after a first import, so what
    connections make stays collectable."""
    module = {"acp": "loopd.acp.server", "lsp": "loopd.lsp.server"}.get(str(protocol))
    if module is None:
        return
    with _loading:  # a connection waits for the warm-up loading its stack, whole
        if module in _loaded:
            return
        loaded = importlib.import_module(module)  # noqa: TID251 (a loopd module)
        if protocol == "acp":  # the stamp of the code loaded (see `Daemon._recorder`)
            import acp  # loaded with loopd.acp.server

            sdk = os.path.realpath(os.path.dirname(acp.__file__ or ""))
            _loaded_stamp["acp"] = early.code_stamp(sdk)
        if protocol == "lsp":
            asyncio.run(loaded.rehearse())  # this thread's own loop
        _loaded.add(module)
        gc.freeze()


_loaded: set[str] = set()
_loaded_stamp: dict[str, str] = {}
_loading = threading.Lock()


async def _hung_up(conn: socket.socket) -> None:
    """Returns when the forwarder closes the control socket (it died or was killed)."""
    conn.setblocking(False)
    loop = asyncio.get_running_loop()
    with contextlib.suppress(OSError):
        while await loop.sock_recv(conn, 1024):
            pass
