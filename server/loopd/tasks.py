"""Racing awaitables, the one way loopd does it.

`first_to_end` runs several awaitables until the first of them ends (a relay and
the loss of its connection, a child's exit and its grace, the answers still owed
and the client hanging up), then cancels the others and waits for every one, so
that what they started is cleaned up before the caller goes on. Cancelling the
caller cancels them all the same way. What each ended with (a result, an error)
is the caller's to read from its own state: the race only orders the ending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable


async def first_to_end(*work: Awaitable[object]) -> None:
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
