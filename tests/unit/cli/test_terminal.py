"""The terminal link's rendering, fed session updates as every runtime sends them:
the answer on stdout once, loopd's notices and tool activity on stderr."""

from __future__ import annotations

import asyncio
import io
from typing import Any

from loopd.cli.terminal import TerminalLink
from loopd.protocol.events import AgentMessageChunk, AgentThoughtChunk, Notice
from loopd.protocol.events_wire import to_wire
from loopd.protocol.turns import Outcome


def link(stream_text: bool = False) -> TerminalLink:
    return TerminalLink(io.StringIO(), io.StringIO(), stream_text=stream_text)


def feed(terminal: TerminalLink, *updates: dict[str, Any]) -> None:
    async def send() -> None:
        for update in updates:
            await terminal.send_update("s", update)

    asyncio.run(send())


def text(words: str, notice: Notice | None = None, message_id: str = "m1") -> dict[str, Any]:
    return to_wire(AgentMessageChunk(words, message_id, notice))


def thought(words: str) -> dict[str, Any]:
    return to_wire(AgentThoughtChunk(words, "t1"))


def streams(terminal: TerminalLink) -> tuple[str, str]:
    assert isinstance(terminal.out, io.StringIO) and isinstance(terminal.err, io.StringIO)
    return terminal.out.getvalue(), terminal.err.getvalue()


def test_a_reply_interrupted_and_asked_again_is_captured_once() -> None:
    terminal = link()
    feed(
        terminal,
        text("The answer"),
        thought("hmm"),
        text(" is", message_id="m1"),
        text("\n\n[The model's reply was interrupted (reset); asking again.]\n\n", "retry", "n1"),
        text("The answer is 42.", message_id="m2"),
    )
    terminal.finish(Outcome("turn", "end_turn"))
    out, err = streams(terminal)
    assert out == "The answer is 42.\n"
    assert "[The model's reply was interrupted (reset); asking again.]\n" in err


def test_a_failure_is_said_on_stderr_once_never_on_stdout() -> None:
    terminal = link()
    feed(terminal, text("Partial"), text("\n\nThe model request failed: 401\n", "error", "e"))
    terminal.finish(Outcome("turn", "end_turn", error="The model request failed: 401"))
    out, err = streams(terminal)
    assert out == "Partial\n"
    assert err.count("The model request failed: 401") == 1


def test_an_error_no_update_carried_is_still_said() -> None:
    terminal = link()
    terminal.finish(Outcome("turn", "end_turn", error="claude exited with status 1"))
    assert streams(terminal) == ("", "claude exited with status 1\n")


def test_a_streamed_line_is_ended_before_stderr_speaks_and_a_cancel_is_noted() -> None:
    terminal = link(stream_text=True)
    feed(terminal, text("Working on"))
    terminal.finish(Outcome("turn", "cancelled"))
    assert streams(terminal) == ("Working on\n", "Cancelled.\n")


def test_the_models_text_is_escaped_but_keeps_its_lines() -> None:
    terminal = link(stream_text=True)
    feed(terminal, text("line one\n\x1b]0;title\x07line two\n"))
    assert streams(terminal)[0] == "line one\n\\x1b]0;title\\x07line two\n"
