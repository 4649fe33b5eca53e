# ruff: noqa: ASYNC240 -- the tests set up and inspect real files
"""Inputs that must never hang or brick `loopd run`: a FIFO planted in the workspace,
and Ctrl-C while a tool waits. Each case is a real `loopd run` subprocess against
the loopback fake model, bounded so a regression fails instead of hanging."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopd.testing.fake_llm import FakeLLMServer, Reply, ScriptedCall
from tests.e2e.safety.conftest import Box, calls, loopd_run, spawn_run

pytestmark = pytest.mark.e2e


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    box = Box.make(tmp_path)
    os.mkfifo(box.ws / "pipe")
    (box.ws / "src").mkdir()
    os.mkfifo(box.ws / "src" / "inner.fifo")
    yield box
    for fifo in (box.ws / "pipe", box.ws / "src" / "inner.fifo"):
        with contextlib.suppress(OSError):  # release a reader a regression left blocked
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


async def test_a_fifo_is_refused_by_read_grep_and_glob_and_the_turn_ends(box: Box) -> None:
    replies = [
        calls(("read", {"path": "pipe"}), ("grep", {"pattern": "x", "path": "pipe"})),
        calls(("grep", {"pattern": "hello"}), ("glob", {"pattern": "**/*fifo"})),
        Reply(text="done"),
    ]
    run = await loopd_run(box, replies, "--yes")

    assert run.code == 0, run.err
    results = list(dict.fromkeys(run.tool_results()))  # each request repeats the history
    assert "not a regular file" in results[0]
    assert "named pipe (FIFO)" in results[1]
    assert "notes.txt:1: hello" in results[2]
    assert "src/inner.fifo" in results[3]


async def test_ctrl_c_while_a_tool_waits_ends_the_run_with_130(box: Box) -> None:
    with FakeLLMServer() as fake:
        fake.script(
            "*", Reply(tool_calls=(ScriptedCall("bash", {"command": "sleep 60"}),)), Reply("x")
        )
        proc = await spawn_run(box, fake, "--yes")
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(30):
                while b'"in_progress"' not in await proc.stdout.readline():
                    pass
                started = time.monotonic()
                proc.send_signal(signal.SIGINT)
                out, _ = await proc.communicate()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert proc.returncode == 130
    assert time.monotonic() - started < 10
    assert b'"stopReason": "cancelled"' in out


async def test_two_calls_with_one_id_are_shown_and_answered_separately(box: Box) -> None:
    (box.ws / "b.txt").write_text("bee\n")
    same = (
        ScriptedCall("read", {"path": "notes.txt"}, id="toolu_same"),
        ScriptedCall("read", {"path": "b.txt"}, id="toolu_same"),
    )
    run = await loopd_run(box, [Reply(tool_calls=same), Reply(text="done")], "--yes")

    assert run.code == 0, run.err
    started = [u for u in run.updates() if u.get("sessionUpdate") == "tool_call"]
    ids = [u["toolCallId"] for u in started]
    assert ids == ["toolu_same", "toolu_same_2"]
    for call_id in ids:
        ends = [
            u
            for u in run.updates()
            if u.get("toolCallId") == call_id and u.get("status") == "completed"
        ]
        assert len(ends) == 1
    sent = run.requests[1]["messages"]
    uses = [b["id"] for m in sent for b in m["content"] if b.get("type") == "tool_use"]
    results = [
        (b["tool_use_id"], json.dumps(b["content"]))
        for m in sent
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert uses == ids
    assert [r[0] for r in results] == ids
    assert "hello" in results[0][1] and "bee" in results[1][1]


async def test_a_stalled_model_stream_ends_the_run_in_seconds(box: Box) -> None:
    """`[limits] stream_idle_seconds = 1`: two stalls (the first retried) end the turn
    in about two seconds, saying so, with the partial text shown once."""
    config = box.base / "config" / "loopd"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("[limits]\nstream_idle_seconds = 1\n")
    stall = Reply(text="alpha beta gamma delta epsilon zeta eta", pause_after=6, gate="never")
    started = time.monotonic()
    run = await loopd_run(box, [stall, stall, Reply(text="unused")])

    assert time.monotonic() - started < 20
    said = "".join(
        u["content"]["text"]
        for u in run.updates()
        if u.get("sessionUpdate") == "agent_message_chunk"
    )
    assert said.count("alpha") == 1
    assert said.count("stream stalled: no data for 1 s") == 1
    assert "no data from the model for 1 s" in said
    assert len(run.requests) == 2


FLOOD_MB = 50


async def test_a_50_mb_command_output_stays_bounded_in_json_store_and_request(box: Box) -> None:
    """A command printing 50 MB (the cap for the model is 30k characters): the `--json`
    output, the session store and the next model request stay small, and the shown
    result names the file that holds all of it."""
    flood = f"yes 0123456789abcdef | head -c {FLOOD_MB}000000; echo; echo THE END"
    run = await loopd_run(box, [calls(("bash", {"command": flood})), Reply(text="done")], "--yes")

    assert run.code == 0, run.err
    assert len(run.out) < 4_000_000
    store = box.base / "data" / "sessions.db"
    size = sum(p.stat().st_size for p in store.parent.glob("sessions.db*"))
    assert size < 8_000_000
    assert len(json.dumps(run.requests[1])) < 100_000
    final = [u for u in run.updates() if u.get("status") in ("completed", "failed")][-1]
    shown = final["content"][0]["content"]["text"]
    assert "THE END" in shown
    spill = Path(final["rawOutput"]["full_output"])
    assert f"the full output is in {spill}" in shown
    assert spill.is_relative_to(box.base / "data" / "outputs")
    assert spill.stat().st_size > FLOOD_MB * 1_000_000
