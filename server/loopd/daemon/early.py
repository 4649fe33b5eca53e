"""ACP's `initialize`, answered by the forwarder from what a daemon of this code wrote.

A cold start's `initialize` used to wait for the daemon to start and import the ACP
stack (~1 s here). Its answer depends on nothing a connection brings but the
request's params (the client's capabilities choose the auth method's form): so each
daemon writes down what it answered (`record`), and the next forwarder whose
request has the same params answers with those bytes at once (`answer_early`),
before the daemon is even up. The daemon's stack still reads that request and
answers it: its answer, checked byte for byte against what was sent, is not sent
again (`loopd.acp.handshake`). What was read ahead, and answered, goes on with stdin
(`loopd.streams.read_ahead`).

Written answers are only used under the key they were written under (`key`): this
loopd's version, the interpreter, the size and mtime of every module that builds the
answer (loopd's ACP frontend and the SDK), and the user config's bytes. Another
version, an edited or upgraded module, a changed config: another key, and the file
is not read. A daemon records only when its own code has the forwarder's stamp (a
daemon still running code edited since gets none written under the new one).

The file lives in the daemon's private folder (`loopd.daemon.place`), written whole
by rename; the forwarder reads it as it reads the config (no FIFO, no link, bounded)
and writes to stdout only a JSON object on one line: protocol, never anything else.
Standard library only: this is every editor's start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys

from loopd import __version__
from loopd.streams.read_ahead import ReadAhead, an_id, answer_line, read_here

MAX_FILE = 1 << 20  # a few answers of a few KB; more is not ours
MAX_LINE = 1 << 20  # an `initialize` request; a longer first line is left to the stack
MAX_ANSWERS = 8  # answers to distinct params kept (a few editors, their versions)
_LOOPD = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def answers_path(folder: str, name: str) -> str:
    """The file of written answers, beside the daemon's socket `name` in `folder`."""
    return os.path.join(folder, f"{name}.initialize.json")


def code_stamp(sdk_dir: str) -> str:
    """What the answer is built from: this interpreter and loopd's version, and the
    size and mtime of each module of loopd's ACP frontend and of the SDK."""
    parts = [__version__, sys.version]
    for folder in (os.path.join(_LOOPD, "acp"), sdk_dir, os.path.join(sdk_dir, "agent")):
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
        except OSError:
            names = []
        for name in names:
            with contextlib.suppress(OSError):
                info = os.stat(os.path.join(folder, name))
                parts.append(f"{folder}/{name}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def sdk_dir_on_path() -> str | None:
    """Where the ACP SDK would be imported from, found without importing it."""
    for entry in sys.path:
        folder = os.path.join(entry or os.curdir, "acp")
        if os.path.isfile(os.path.join(folder, "schema.py")):
            return os.path.realpath(folder)
    return None


def key(stamp: str, config: bytes | None) -> str:
    """The key answers are written and read under: the code's stamp and the config."""
    digest = hashlib.sha256(b"-" if config is None else b"+" + config).hexdigest()
    return f"{stamp}:{digest}"


def answer_early(path: str, want: str) -> ReadAhead | None:
    """Read the editor's first line and, when it is an `initialize` whose params have
    an answer written under `want`, write that answer to stdout. None (nothing read)
    when no answer is written under `want`: the stack answers, as before."""
    answers = _answers(path, want)
    if not answers:
        return None
    pending = _first_line(0)
    read = read_here(ReadAhead(pending))
    request = _request(pending)
    if request is None:
        return read
    request_id, params = request
    result = next((a["result"] for a in answers if a.get("params") == params), None)
    if not isinstance(result, str) or not _one_object(result):
        return read
    line = answer_line(request_id, result)
    _write_all(1, line)
    return read_here(ReadAhead(pending, request_id, line))


def record(path: str, under: str, params: object, result: str) -> None:
    """Write down this answer to these params under `under` (the daemon, after its
    stack answered). Answers under another key are dropped; so are the oldest past
    `MAX_ANSWERS`. Written whole, by rename: a forwarder never reads half a file."""
    current = _answers(path, under)
    if {"params": params, "result": result} in current:
        return  # already so
    kept = [a for a in current if a.get("params") != params]
    body = {"key": under, "answers": [{"params": params, "result": result}, *kept][:MAX_ANSWERS]}
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as file:
            json.dump(body, file, separators=(",", ":"))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _answers(path: str, want: str) -> list[dict[str, object]]:
    raw = _regular_file(path)
    if raw is None:
        return []
    try:
        body = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(body, dict) or body.get("key") != want:
        return []
    answers = body.get("answers")
    return [a for a in answers if isinstance(a, dict)] if isinstance(answers, list) else []


def _regular_file(path: str) -> bytes | None:
    """The file's bytes if it is a regular file of this user's, not a link, bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return None
        raw = file.read(MAX_FILE + 1)
    return raw if len(raw) <= MAX_FILE else None


def _first_line(fd: int) -> bytes:
    """Bytes from `fd` up to and with the first newline (or its end, or `MAX_LINE`).
    What came after the newline in the same read comes too: it is all handed on."""
    data = bytearray()
    while b"\n" not in data and len(data) <= MAX_LINE:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _request(pending: bytes) -> tuple[int | str, object] | None:
    """The id and params of an `initialize` request on the first line, else None."""
    line, newline, rest = pending.partition(b"\n")
    if not newline or rest.strip():
        return None  # more after it: answered in order by the stack, as anything else
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    if message.get("jsonrpc") != "2.0" or not an_id(message.get("id")):
        return None
    return message["id"], message.get("params")


def _one_object(text: str) -> bool:
    if "\n" in text or "\r" in text:
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except InterruptedError:
            continue
