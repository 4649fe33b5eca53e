"""What a process read of its own stdin before the protocol stack took it over.

A forwarder may read the editor's first line ahead of the stack, and answer it
(`loopd.daemon.early`). Those bytes and that answer go on with stdin: to the daemon
in the hello (`ReadAhead.to_wire`, `ReadAhead.of`), or, when no daemon takes stdin,
to the connection served in this same process (`take_read_ahead`). The ACP stack
reads them first and does not send the answer twice (`loopd.acp.handshake`, which
checks it against `answer_line`). Here, below both the daemon and the frontends,
so neither imports the other for it. Standard library only: this is on every
editor's start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReadAhead:
    """What a forwarder read of the editor's stdin before handing it over, and the
    answer it gave (the line, with the request's id) if it gave one."""

    pending: bytes
    answered_id: int | str | None = None
    answer: bytes | None = None

    def to_wire(self) -> dict[str, object]:
        return {"pending": self.pending.hex(), "id": self.answered_id,
                "answer": None if self.answer is None else self.answer.decode()}  # fmt: skip

    @staticmethod
    def of(wire: object) -> ReadAhead | None:
        """From a forwarder's hello; None when absent. Raises ValueError when malformed."""
        if wire is None:
            return None
        if not isinstance(wire, dict) or not isinstance(wire.get("pending"), str):
            raise ValueError("the forwarder's read-ahead is not an object with pending bytes")
        answered, answer = wire.get("id"), wire.get("answer")
        if answer is not None and not (isinstance(answer, str) and an_id(answered)):
            raise ValueError("the forwarder's early answer has no id")
        line = None if answer is None else answer.encode()
        return ReadAhead(bytes.fromhex(wire["pending"]), answered if line else None, line)


def an_id(value: object) -> bool:
    """A JSON-RPC request id: a string or an integer (not a bool)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def answer_line(request_id: int | str, result: str) -> bytes:
    """The bytes the ACP SDK writes for a response with this id and result (its
    sender: `json.dumps(payload, separators=(",", ":")) + "\\n"`, keys in this order)."""
    head = json.dumps({"jsonrpc": "2.0", "id": request_id}, separators=(",", ":"))[:-1]
    return f'{head},"result":{result}}}\n'.encode()


def read_here(read: ReadAhead) -> ReadAhead:
    """This process read `read` ahead of its own stdin: kept for `take_read_ahead`."""
    global _here
    _here = read
    return read


def handed_over() -> None:
    """The daemon took stdin: what was read ahead of it went with the hello."""
    global _here
    _here = None


def take_read_ahead() -> ReadAhead | None:
    """What this process read ahead of its own stdin (and maybe answered), for the
    connection served here when no daemon took it; once."""
    global _here
    read, _here = _here, None
    return read


_here: ReadAhead | None = None  # fd 0 is this process's: so is what was read of it
