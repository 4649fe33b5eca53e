"""Keeping stdout for protocol messages only (`loopd acp`, `loopd lsp` on stdio).

Call `protect_stdout` first thing: the protocol writer gets a private handle on the
real stdout, and descriptor 1 (so `print`, and any library writing to it) becomes
stderr. A stray line can then never corrupt the channel the editor reads.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO, cast


def protect_stdout() -> BinaryIO:
    """A private handle on the real stdout, for the protocol writer; descriptor 1
    (and so `print`, and any library writing to it) becomes stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return cast(BinaryIO, os.fdopen(protocol_fd, "wb", buffering=0))
