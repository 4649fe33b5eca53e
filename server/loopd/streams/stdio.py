"""stdin and stdout for the protocol servers (`loopd acp`, `loopd lsp` on stdio).

Call `protect_stdout` first thing: the protocol writer gets a private handle on the
real stdout, and descriptor 1 (so `print`, and any library writing to it) becomes
stderr. A stray line can then never corrupt the channel the editor reads.

`open_stdin` and `open_stdout` accept whatever the process was given, not only the
pipes an editor passes: the event loop watches pipes, sockets and terminals, and
anything it cannot watch (a regular file, `/dev/null`) is read by a thread or written
directly. So `loopd acp < requests.jsonl > out.jsonl` answers the requests and exits
at the end of the file, and `loopd acp </dev/null` exits at once. A descriptor that
is not open at all ends the process with a message on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import stat
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

_CHUNK = 1 << 16


def protect_stdout() -> BinaryIO:
    """A private handle on the real stdout, for the protocol writer; descriptor 1
    (and so `print`, and any library writing to it) becomes stderr. Exits with a
    message when stdin or stdout is not open (checked first: a closed descriptor 0
    would otherwise be reused by the duplicate made here)."""
    _require_open(0, "stdin")
    _require_open(1, "stdout")
    if sys.stdout is not None:
        sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(sys.stderr.fileno(), 1)
    return cast(BinaryIO, os.fdopen(protocol_fd, "wb", buffering=0))


@dataclass(slots=True)
class Stdin:
    reader: asyncio.StreamReader
    batch: bool  # a regular file: a batch of requests, not a live client
    keep: tuple[Any, ...]  # strong references asyncio does not keep itself

    def close(self) -> None:
        """Stop watching the descriptor (it stays open: its owner closes it)."""
        for item in self.keep:
            if isinstance(item, asyncio.BaseTransport):
                item.close()


async def open_stdin(limit: int, fd: int = 0) -> Stdin:
    """A reader on descriptor `fd` (stdin: this process's, or an editor's handed to
    the daemon), whatever it is (see the module doc). The descriptor stays open."""
    _require_open(fd, "stdin")
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    mode = os.fstat(fd).st_mode
    if _pollable(fd, mode):
        protocol = asyncio.StreamReaderProtocol(reader)
        source = os.fdopen(fd, "rb", buffering=0, closefd=False)
        transport, _ = await loop.connect_read_pipe(lambda: protocol, source)
        return Stdin(reader, False, (protocol, transport, source))
    pump = threading.Thread(target=_pump, args=(fd, reader, loop), name="loopd-stdin", daemon=True)
    pump.start()
    return Stdin(reader, stat.S_ISREG(mode), (pump,))


async def open_stdout(out: BinaryIO) -> asyncio.StreamWriter:
    """A writer on `out` (from `protect_stdout`): a pipe transport where the loop can
    watch it, else one that writes straight through (a regular file never blocks for
    long). `hung_up(writer)` returns once the reader of a pipe is gone."""
    loop = asyncio.get_running_loop()
    protocol = _Out()
    if _pollable(out.fileno(), os.fstat(out.fileno()).st_mode):
        transport, _ = await loop.connect_write_pipe(lambda: protocol, out)
    else:
        transport = FileTransport(out, protocol)
    return asyncio.StreamWriter(transport, protocol, None, loop)


async def hung_up(writer: asyncio.StreamWriter) -> None:
    """Returns once nobody reads what `writer` (from `open_stdout`) writes."""
    protocol = writer.transport.get_protocol()
    assert isinstance(protocol, _Out)
    await protocol.gone.wait()


class _Out(asyncio.streams.FlowControlMixin):
    """stdout's protocol: `gone` is set when the connection is lost (the reading end
    of the pipe closed)."""

    def __init__(self) -> None:
        super().__init__()
        self.gone = asyncio.Event()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.gone.set()


class FileTransport(asyncio.WriteTransport):
    """A write transport over a file the event loop cannot watch: writes go straight
    to the file, so there is never a buffer to drain."""

    def __init__(self, out: BinaryIO, protocol: asyncio.BaseProtocol) -> None:
        super().__init__()
        self._out = out
        self._protocol = protocol
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._out.write(data)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def get_write_buffer_size(self) -> int:
        return 0


def _pump(fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    """Feed descriptor `fd` to `reader` from a thread, then its end."""
    try:
        while chunk := os.read(fd, _CHUNK):
            _call(loop, reader.feed_data, chunk)
    except OSError as err:
        sys.stderr.write(f"loopd: cannot read stdin: {err}\n")
    finally:
        _call(loop, reader.feed_eof)


def _call(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed: nobody is reading
        loop.call_soon_threadsafe(fn, *args)


def _pollable(fd: int, mode: int) -> bool:
    """Whether the event loop can watch `fd`: never a regular file or a folder, and
    not every character device (`/dev/null` refuses epoll with EPERM, which asyncio
    would only report later, leaving the reader waiting for ever)."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return False
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ | selectors.EVENT_WRITE)
        except (OSError, ValueError):
            return False
    return True


def _require_open(fd: int, name: str) -> None:
    try:
        os.fstat(fd)
    except OSError as err:
        raise SystemExit(f"loopd: {name} is not open ({err.strerror}); nothing to serve") from None
