"""Inside the sandbox: carry a command's TCP connections to the proxy's Unix socket.

The bubblewrap sandbox has its own network namespace: a loopback and nothing else,
so no packet reaches the machine's network. The host proxy's socket is bound in as
`INSIDE_SOCKET`; this relay listens on `127.0.0.1:PROXY_PORT` of that loopback and
copies each connection to the socket, so every client that honours `HTTP_PROXY`,
`HTTPS_PROXY` or `ALL_PROXY` (pip, npm, cargo, curl, git) works unchanged.

Standard library only: the in-sandbox helper (`landlock_syscalls`) starts it before
it installs the Unix-socket filter and execs the command, because the relay must
create Unix sockets and the command must not. It is started with a double fork, so it
is not the command's descendant, and it makes itself non-dumpable, so the command
(same uid, no capabilities) cannot ptrace it or write its memory to make it connect
elsewhere. It dies with the sandbox's pid namespace when the command exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import threading

INSIDE_SOCKET = "/tmp/.loopd-proxy.sock"
PROXY_PORT = 3128
_PR_SET_DUMPABLE = 4
_CHUNK = 64 * 1024


def proxy_env(port: int = PROXY_PORT) -> dict[str, str]:
    """The variables that point clients at the relay (both spellings: curl reads the
    lower-case `http_proxy` only, most others either)."""
    http, socks = f"http://127.0.0.1:{port}", f"socks5h://127.0.0.1:{port}"
    env = {"HTTP_PROXY": http, "HTTPS_PROXY": http, "ALL_PROXY": socks, "NO_PROXY": ""}
    return env | {k.lower(): v for k, v in env.items()}


def start(socket_path: str, port: int) -> None:
    """Bind the listener now (so the command finds it at once), then serve it from a
    detached grandchild. Returns in the caller, which goes on to exec the command."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                _detach(listener.fileno())
                _serve(listener, socket_path)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    listener.close()


def _detach(keep: int) -> None:
    """No ptrace, no terminal, none of the command's descriptors (its output pipe
    must close when the command is done, not when the relay is)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 16)


def _serve(listener: socket.socket, socket_path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_pair, args=(client, socket_path), daemon=True).start()


def _pair(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
    back.start()
    _copy(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _copy(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(_CHUNK):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for side in (source, sink):
            with contextlib.suppress(OSError):
                side.shutdown(socket.SHUT_RDWR)
