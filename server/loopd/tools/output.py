"""A command's output, bounded three ways, and kept whole in a file.

A command can print without end (`yes`, a runaway log, a 300 MB dump). Each copy of
its output is bounded on its own terms:

- the model reads the head and the tail, `output_max_chars` in all (`HeadTail`);
- the editor is shown the output live, as the tail of at most `live_max_chars` per
  update and at most `live_budget_chars` over the whole call (every update is sent
  to every editor and journaled, so without a budget a command's output is copied
  once per chunk); then the head and tail once more when it ends (`LiveView`);
- the full output goes to a private file (`Spill`) under the session's data dir,
  which the shown output names whenever it was cut, up to `spill_max_bytes`.

Memory holds at most the head and the tail, whatever the command prints.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from loopd.engine.ports import ToolProgress
from loopd.protocol.events import TextBlock


class HeadTail:
    """Accumulates streamed text, keeping at most `keep` characters: everything while
    it fits, then the first and last halves. `render(cap)` gives the text within
    `cap` characters (cap <= keep) with a note of what was cut; `tail(n)` the last
    `n` characters (n <= keep / 2)."""

    def __init__(self, keep: int) -> None:
        self._half = keep // 2
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.total = 0

    def append(self, text: str) -> None:
        self.total += len(text)
        room = self._half - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if text:
            self._tail += text
            if len(self._tail) > 2 * self._half:  # trim rarely: amortised O(1) per char
                self._tail = self._tail[-self._half :]

    def tail(self, size: int) -> str:
        if len(self._tail) >= size:
            return self._tail[-size:]
        return ("".join(self._head) + self._tail)[-size:]

    def render(self, cap: int, where: str = "") -> str:
        """Within `cap` characters plus a note of what was cut: the note tells the
        model to narrow the command, or names `where` the full output is."""
        cap = min(cap, 2 * self._half)
        kept = "".join(self._head) + self._tail[-self._half :]
        if self.total <= cap:
            return kept
        head, tail = kept[: cap // 2], kept[len(kept) - (cap - cap // 2) :]
        cut = self.total - len(head) - len(tail)
        hint = (
            f"the full output is in {where}"
            if where
            else "narrow the command (grep, head, tail) to see them"
        )
        return (
            f"{head}\n[... {cut} characters cut from the middle of the output; {hint} ...]\n{tail}"
        )


@dataclass(slots=True)
class LiveView:
    """The editor's live view of a running command: the latest `size` characters per
    update, until `budget` characters were sent; then one last update says where
    the output continues, and the rest waits for the final result."""

    progress: ToolProgress
    size: int
    budget: int
    where: str = ""
    sent: int = 0
    stopped: bool = False

    async def update(self, output: HeadTail) -> None:
        if self.stopped:
            return
        text = output.tail(self.size)
        if self.sent + len(text) > self.budget:
            self.stopped = True
            where = f"; it continues in {self.where}" if self.where else ""
            text = (
                f"{text}\n[... live output stops here{where}; the end is shown when "
                "the command ends ...]"
            )
        self.sent += len(text)
        await self.progress((TextBlock(text),))


class Spill:
    """The full output, written as it arrives to `path` (0600, created fresh), up to
    `max_bytes`. `finish(keep)` closes it, and removes it unless `keep`. A file that
    cannot be written is given up on silently: the output is still shown, bounded."""

    def __init__(self, path: str | None, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.cut = False  # the output was longer than the file may grow
        self._left = max_bytes
        self._fd: int | None = None

    def write(self, text: str) -> None:
        if self.path is None or self._left <= 0:
            return
        if self._fd is None:
            try:
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
                self._fd = os.open(self.path, flags, 0o600)
            except OSError:
                self.path = None
                return
        data = text.encode("utf-8", "replace")
        self.cut = self.cut or len(data) > self._left
        data = data[: self._left]
        self._left -= len(data)
        try:
            os.write(self._fd, data)
        except OSError:  # a full disk, say
            self.finish(keep=False)

    def finish(self, keep: bool) -> str | None:
        """Where the kept output is, in words (the path, and how much of the output
        it holds when not all), or None."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.path is not None and not keep:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            self.path = None
        if self.path is not None and self.cut:
            return f"{self.path} (its first {self.max_bytes // (1024 * 1024)} MiB)"
        return self.path
