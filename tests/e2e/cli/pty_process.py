"""A child process on a real pseudo-terminal, as a person's shell would run it.

The terminal is the child's stdin, stdout, stderr and controlling terminal (so
`/dev/tty` opens, Ctrl-C is a SIGINT from the line discipline), and the test reads
and types through the master side.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Sequence
from pathlib import Path


class PtyProcess:
    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: Path) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.master = master
        self.proc = subprocess.Popen(
            list(argv),
            env=env,
            cwd=cwd,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.output = ""

    def expect(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """Read until `pattern` (a regex) appears in everything read so far."""
        deadline = time.monotonic() + timeout
        while (match := re.search(pattern, self.output)) is None:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{pattern!r} never appeared in:\n{self.output}")
        return match

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout: float = 30.0) -> int:
        """Read to the end, then the exit code."""
        deadline = time.monotonic() + timeout
        while self._read(max(deadline - time.monotonic(), 0.01)):
            pass
        try:
            return self.proc.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"still running after {timeout}s:\n{self.output}") from None
        finally:
            os.close(self.master)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.output += data.decode("utf-8", "replace")
        return bool(data)
