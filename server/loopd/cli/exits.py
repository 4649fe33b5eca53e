"""The exit codes, as `loopd --help` and the README state them."""

from __future__ import annotations

EXIT_OK = 0  # success; for `run`, the turn ended normally
EXIT_FAILED = 1  # the turn failed (the error is on stderr) or did not finish
EXIT_USAGE = 2  # a usage or configuration error: nothing ran
EXIT_CANCELLED = 130  # cancelled (Ctrl-C), as shells report SIGINT
