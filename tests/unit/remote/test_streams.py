"""A stream's log: what follows `Last-Event-ID` comes once and in order; what is no
longer kept is `Gone`; a new reader ends the one before."""

from __future__ import annotations

import asyncio
import json

import pytest

from loopd.remote.streams import Gone, Log, sse


async def take(log: Log, after: int, count: int) -> list[int]:
    numbers: list[int] = []
    async for event in log.follow(after):
        assert event is not None
        numbers.append(json.loads(event[1])["n"])
        if len(numbers) == count:
            break
    return numbers


async def test_a_reader_resuming_after_n_gets_what_followed_once_in_order() -> None:
    log = Log()
    for n in range(1, 6):
        log.push({"n": n})
    assert await take(log, 0, 2) == [1, 2]
    assert await take(log, 2, 3) == [3, 4, 5]  # resumed where it broke
    reading = asyncio.ensure_future(take(log, 5, 2))
    log.push({"n": 6})
    log.push({"n": 7})
    assert await reading == [6, 7]


async def test_what_is_no_longer_kept_is_gone() -> None:
    log = Log(limit=40)
    for n in range(1, 20):
        log.push({"n": n, "pad": "xxxxxxxx"})
    with pytest.raises(Gone):
        log.check(0)
    with pytest.raises(Gone):
        log.check(25)  # from the future
    log.check(18)
    assert await take(log, 18, 1) == [19]


async def test_a_new_reader_ends_the_one_before() -> None:
    log = Log()
    log.push({"n": 1})
    first = log.follow(0)
    assert (await anext(first)) is not None
    waiting = asyncio.ensure_future(anext(first))
    second = log.follow(1)
    log.push({"n": 2})
    got = await anext(second)
    assert got is not None and json.loads(got[1]) == {"n": 2}
    with pytest.raises(StopAsyncIteration):
        await waiting


async def test_a_closed_log_ends_its_reader_after_what_it_holds() -> None:
    log = Log()
    log.push({"n": 1})
    log.close()
    assert [e[0] async for e in log.follow(0) if e is not None] == [1]


def test_frames_carry_their_number_as_the_sse_id() -> None:
    assert sse((7, '{"a":1}')) == b'id: 7\ndata: {"a":1}\n\n'
    assert sse(None).startswith(b":")
