"""A foreign CLI's stdout (`loopd.runtimes.foreign.jsonl`, Claude Code's stream-json
and `codex app-server`) is bounded like a child ACP agent's. Not named in the issue:
a line longer than the 64 MiB cap is dropped, whatever it held, and the messages
after it still arrive; a line that never ends costs the cap, not the line."""

from __future__ import annotations

import asyncio
import sys
import tracemalloc

from loopd.runtimes.foreign.jsonl import JsonlProcess

# 80 MiB of one JSON string, then a message of its own line, then one that never ends.
CHILD = r"""
import sys
out = sys.stdout
out.write('{"type": "huge", "text": "'); out.write("x" * (80 << 20)); out.write('"}\n')
out.write('{"type": "after"}\n')
out.write('{"type": "endless", "text": "' + "y" * (160 << 20)); out.flush()
"""


async def test_an_oversized_line_is_dropped_and_what_follows_arrives() -> None:
    child = await JsonlProcess.spawn(
        [sys.executable, "-c", CHILD], cwd="/", env={"PATH": "/usr/bin:/bin"}, name="cli"
    )
    tracemalloc.start()
    try:
        async with asyncio.timeout(120):
            seen = [message async for message in child.messages()]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await child.close(grace=1)
    assert seen == [{"type": "after"}]
    assert peak < 3 * (64 << 20)  # the cap and a copy, never the 160 MiB line
