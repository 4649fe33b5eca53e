"""LSP's base protocol, read so that no input stops the server answering.

pygls's reader trusts the framing: one frame with a wrong, negative, zero,
non-numeric, missing or duplicated `Content-Length`, or a bare LF, and it never
finds the next frame (the server stays up and never answers again); a header line
over its buffer kills it. `serve_frames` replaces it:

- header lines end with CRLF or a bare LF, are capped at `MAX_HEADER_LINE`, and a
  frame needs exactly one `Content-Length`, a number from 1 to `MAX_BODY`;
- anything else is answered with a JSON-RPC parse error (id null, as JSON-RPC says
  when the request's id is unknown) and reading goes on with the next frame: a
  `Content-Length:` glued to garbage, or found inside a body that did not parse
  (a length that was too long swallows the next frame's header), starts it;
- a body that parses but is not a request, notification or response is an Invalid
  Request, answered with its id when it has a usable one;
- after `shutdown`, every request but `exit` is answered with Invalid Request
  (pygls would drop it, leaving the client waiting).

Valid messages go to pygls's protocol unchanged.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

from loopd.protocol.jsonvalues import loads_bounded
from loopd.streams.frames import MARKER, MAX_BODY, MAX_HEADER_LINE, BadFrame, FrameReader
from loopd.streams.lines import LineReader

log = logging.getLogger(__name__)

PARSE_ERROR, INVALID_REQUEST = -32700, -32600

__all__ = ["MARKER", "MAX_BODY", "MAX_HEADER_LINE", "FrameReader", "serve_frames"]


@dataclass(slots=True)
class Dispatcher:
    """Hands valid messages to pygls's `protocol` and answers the rest itself."""

    protocol: JsonRPCProtocol
    frames: FrameReader
    shut_down: bool = False

    def dispatch(self, body: bytes) -> None:
        try:
            data = loads_bounded(body)
        except ValueError as err:
            resume = body.find(MARKER, 1)
            if resume > 0:  # the length was too long and took in the next frame
                self.frames.lines.unread(body[resume:])
            self.error(None, PARSE_ERROR, f"Parse error: the body is not JSON ({err})")
            return
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
            self.error(_id_of(data), INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 object")
            return
        is_request = "method" in data and "id" in data
        if self.shut_down and is_request and data["method"] != "exit":
            self.error(_id_of(data), INVALID_REQUEST, "Invalid Request: the server is shut down")
            return
        try:
            message = self.protocol.structure_message(data)
        except JsonRpcException as err:
            if is_request:
                self.error(_id_of(data), err.code, err.message)
            return
        self.shut_down = self.shut_down or (is_request and data["method"] == "shutdown")
        try:
            self.protocol.handle_message(message)
        except Exception:  # pygls answers what it can; nothing may end the reading
            log.exception("handling a message failed")

    def error(self, msg_id: int | str | None, code: int, message: str) -> None:
        log.warning("answering a bad message with %d: %s", code, message)
        response = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        self.protocol._send_data(response)  # pygls's framed, ordered writer


def _id_of(data: Any) -> int | str | None:
    """The request's id when it is one JSON-RPC allows, else None."""
    msg_id = data.get("id") if isinstance(data, dict) else None
    return msg_id if isinstance(msg_id, int | str) and not isinstance(msg_id, bool) else None


async def serve_frames(stop: threading.Event, lines: LineReader, protocol: JsonRPCProtocol) -> None:
    """Read frames until the stream ends or `stop` is set; see the module docstring."""
    frames = FrameReader(lines)
    dispatcher = Dispatcher(protocol, frames)
    while not stop.is_set():
        frame = await frames.next()
        match frame:
            case None:
                return
            case BadFrame(reason):
                dispatcher.error(None, PARSE_ERROR, f"Parse error: {reason}")
            case bytes():
                dispatcher.dispatch(frame)
