"""LSP's base protocol frames (`Content-Length` headers, then a JSON body), read so
that no input stops the reader: header lines end with CRLF or a bare LF and are capped
at `MAX_HEADER_LINE`; a frame needs exactly one `Content-Length`, a number from 1 to
`MAX_BODY`; anything else is a `BadFrame` and reading goes on with the next frame.

Standard library only: `loopd lsp` (`loopd.lsp.framing`), `loopd lsp --remote` and
`loopd serve`'s LSP connections (`loopd.remote`) read with it, and the last two never
load pygls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loopd.streams.lines import LineReader, Overlong

MAX_HEADER_LINE = 64 * 1024
MAX_BODY = 64 * 1024 * 1024
MARKER = b"Content-Length:"
_HEADER = re.compile(rb"([A-Za-z0-9-]+):[ \t]*(.*)")


@dataclass(frozen=True, slots=True)
class BadFrame:
    """A frame that cannot be read; `reason` is said in the parse error."""

    reason: str


class FrameReader:
    """Frames from a byte stream: each body, a `BadFrame`, or None at the end."""

    def __init__(self, lines: LineReader) -> None:
        self.lines = lines

    async def next(self) -> bytes | BadFrame | None:
        length: int | None = None
        problem: str | None = None
        headers = 0
        while True:
            line = await self.lines.line()
            if line is None:
                return None
            if isinstance(line, Overlong):
                return BadFrame(
                    f"a header line of {line.size} bytes (the limit is {MAX_HEADER_LINE})"
                )
            text = line.rstrip(b"\n").rstrip(b"\r")
            if not text:
                if headers == 0:
                    continue  # blank lines between frames
                break
            headers += 1
            start = text.find(MARKER)
            text = text[start:] if start > 0 else text  # a frame glued to garbage
            match = _HEADER.fullmatch(text)
            if match is None:
                return BadFrame(f"not a header line: {text[:60]!r}")
            if match.group(1).lower() == b"content-length":
                problem = problem or _length_problem(match.group(2).strip(), length)
                length = length if length is not None else -1
                if problem is None:
                    length = int(match.group(2))
        if problem is not None or length is None or length < 0:
            return BadFrame(problem or "a frame without a Content-Length header")
        return await self.lines.exactly(length)


def _length_problem(value: bytes, seen: int | None) -> str | None:
    if seen is not None:
        return "a frame with two Content-Length headers"
    if not value.isdigit():
        return f"Content-Length is not a number: {value[:40]!r}"
    if not 0 < int(value) <= MAX_BODY:
        return f"Content-Length {int(value)} is not between 1 and {MAX_BODY}"
    return None


def frame(body: bytes) -> bytes:
    """`body` framed for the wire."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
