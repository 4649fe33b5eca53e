"""`Batched`, the ACP transport's writer, on a real pipe: messages sent by many tasks
at once arrive whole and in the order sent, past the batch size too; closing hands
over what waits; once the reader is gone a send raises instead of vanishing."""

from __future__ import annotations

import asyncio
import os

import pytest

from loopd.acp.transport import BATCH, Batched


async def _pipe() -> tuple[int, asyncio.StreamWriter]:
    read_fd, write_fd = os.pipe()
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb")
    )
    return read_fd, asyncio.StreamWriter(transport, protocol, None, loop)


async def _read_all(fd: int) -> bytes:
    def read() -> bytes:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)

    return await asyncio.to_thread(read)


async def test_many_senders_arrive_whole_and_in_the_order_sent() -> None:
    read_fd, writer = await _pipe()
    out = Batched(writer)
    lines = [f"{i:06d} {'x' * (i % 300)}\n".encode() for i in range(5_000)]
    assert sum(map(len, lines)) > 10 * BATCH
    reading = asyncio.create_task(_read_all(read_fd))
    await asyncio.gather(*(out.send(line) for line in lines))
    out.close()
    writer.close()
    assert await reading == b"".join(lines)
    os.close(read_fd)


async def test_closing_hands_over_what_waits_and_nothing_goes_after() -> None:
    read_fd, writer = await _pipe()
    out = Batched(writer)
    await out.send(b"first\n")
    out.close()
    with pytest.raises(ConnectionError):
        await out.send(b"late\n")
    writer.close()
    assert await _read_all(read_fd) == b"first\n"
    os.close(read_fd)


async def test_a_send_after_the_reader_went_away_raises() -> None:
    read_fd, writer = await _pipe()
    out = Batched(writer)
    os.close(read_fd)
    with pytest.raises((ConnectionError, OSError)):
        for _ in range(1_000):  # the loss is seen when a batch is handed over
            await out.send(b"y" * 1024)
            await asyncio.sleep(0)
