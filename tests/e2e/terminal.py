"""A program on a real pseudo-terminal, driven like a person at the keyboard.

`pty.fork` makes the terminal the child's controlling tty, so `/dev/tty` (where
`getpass` and terminal prompts read) is the one the test types into.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


class PtyProgram:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the program
            os.chdir(cwd)
            os.execvpe(argv[0], list(argv), dict(env))
        self.pid, self.fd = pid, fd
        self.screen = ""
        self._mark = 0
        self.status: int | None = None

    def expect(self, text: str, timeout: float = 30.0) -> str:
        """Read until `text` is shown after what the last `expect` matched, as a
        person reads on; returns everything shown so far."""
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(text, self._mark)) < 0:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{text!r} never appeared; the screen:\n{self.screen}")
        self._mark = found + len(text)
        return self.screen

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def wait(self, timeout: float = 30.0) -> int:
        """The exit code, reading the rest of the output meanwhile."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                while self._read(0.05):
                    pass
                self.status = os.waitstatus_to_exitcode(status)
                os.close(self.fd)
                return self.status
            self._read(0.05)
        self.kill()
        raise AssertionError(f"still running after {timeout}s; the screen:\n{self.screen}")

    def kill(self) -> None:
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.status = -9
            os.close(self.fd)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # the child closed the terminal
            return False
        self.screen += chunk.decode(errors="replace")
        return bool(chunk)
